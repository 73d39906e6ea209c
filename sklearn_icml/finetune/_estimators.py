"""DoRAClassifier and DoRARegressor: fine-tune a pre-trained torch network with DoRA, LoRA, fully or head-only.

The estimators deep-copy the caller's network (or build a small MLP), put
adapters in place (:func:`apply_adapters`), train through the library's
training layer (:class:`sklearn_icml.utils.Trainer`: AdamW,
seeded mini-batches, scikit-learn's MLP stopping rules), merge the adapters
back (:func:`merge_adapters`) and keep the merged network as a CPU module in
``module_``.
"""

import copy
from numbers import Integral, Real

import numpy as np
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..utils._sklearn_private import HasMethods, Interval, StrOptions, _fit_context
from ..utils._torch import as_numpy, to_numpy, to_tensor, torch_generator, torch_seed
from ..utils._torch_base import TorchEstimatorMixin
from ..utils._validation import check_decoupled_weight_decay

__all__ = ["DoRAClassifier", "DoRARegressor"]

_PREDICT_CHUNK = 8192


class _DoRAEstimator(TorchEstimatorMixin, BaseEstimator):
    """Shared fit/predict machinery of DoRAClassifier and DoRARegressor."""

    _parameter_constraints = {
        "module": [HasMethods(["forward", "named_modules", "parameters"]), None],
        "method": [StrOptions({"dora", "lora", "full", "head"})],
        "r": [Interval(Integral, 1, None, closed="left")],
        "lora_alpha": [Interval(Real, 0, np.inf, closed="neither"), None],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "use_rslora": ["boolean"],
        "norm": [StrOptions({"dense", "factored"})],
        "target_modules": [list, tuple, str, callable, None],
        "train_head": ["boolean"],
        "hidden_layer_sizes": ["array-like"],
        "activation": [StrOptions({"relu", "tanh", "gelu"})],
        # torch trains in float32: a step size beyond its range overflows inside the optimizer
        "learning_rate": [Interval(Real, 0, float(np.finfo(np.float32).max), closed="neither")],
        "weight_decay": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, module=None, *, method="dora", r=8, lora_alpha=None, dropout=0.0, use_rslora=False,
                 norm="dense", target_modules=None, train_head=True, hidden_layer_sizes=(64, 64),
                 activation="relu", learning_rate=1e-3, weight_decay=0.0, batch_size=64, max_iter=100,
                 early_stopping=False, validation_fraction=0.1, n_iter_no_change=10, tol=1e-4,
                 device="cpu", random_state=None, verbose=0):
        self.module = module
        self.method = method
        self.r = r
        self.lora_alpha = lora_alpha
        self.dropout = dropout
        self.use_rslora = use_rslora
        self.norm = norm
        self.target_modules = target_modules
        self.train_head = train_head
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    # -- building the network -------------------------------------------------------------------
    def _hidden_sizes(self):
        sizes = np.asarray(self.hidden_layer_sizes).ravel()
        if sizes.size and (sizes.dtype.kind not in "iu" or (sizes < 1).any()):
            raise ValueError(f"{type(self).__name__}: hidden_layer_sizes must hold positive integers; "
                             f"got {self.hidden_layer_sizes!r}.")
        return [int(s) for s in sizes]

    def _network(self, X, n_out, y_mean, y_scale, generator):
        if self.module is None:
            x_mean = X.mean(axis=0)
            x_scale = X.std(axis=0)
            x_scale[x_scale == 0] = 1.0
            from ..utils._mlp import StandardizedMLP

            return StandardizedMLP(X.shape[1], self._hidden_sizes(), n_out, activation=self.activation,
                                   x_mean=x_mean, x_scale=x_scale, y_mean=y_mean, y_scale=y_scale,
                                   generator=generator)
        from torch import nn

        if not isinstance(self.module, nn.Module):
            raise TypeError(f"{type(self).__name__}: module must be a torch.nn.Module or None; "
                            f"got {type(self.module).__name__}.")
        return copy.deepcopy(self.module)

    def _prepare(self, module, generator_seed):
        """Freeze/unfreeze and put adapters in place; returns (adapted names, head name)."""
        from torch import nn

        from ._adapters import apply_adapters

        name = type(self).__name__
        linears = [n for n, m in module.named_modules() if isinstance(m, nn.Linear)]
        head = linears[-1] if linears else None
        if self.method == "full":
            for p in module.parameters():
                p.requires_grad_(True)
            return [], head
        if head is None:
            raise ValueError(f"{name}: method={self.method!r} needs an nn.Linear in the module; it has none.")
        if self.method == "head":
            for p in module.parameters():
                p.requires_grad_(False)
            for p in module.get_submodule(head).parameters():
                p.requires_grad_(True)
            return [], head
        try:
            adapted = apply_adapters(module, self.method, target_modules=self.target_modules, r=self.r,
                                     alpha=self.lora_alpha, dropout=self.dropout, use_rslora=self.use_rslora,
                                     norm=self.norm, freeze=True, random_state=generator_seed)
        except (ValueError, TypeError) as exc:
            where = f" (the adapters' alpha is lora_alpha={self.lora_alpha!r})" if "alpha=" in str(exc) else ""
            raise type(exc)(f"{name}: {exc}{where}") from exc
        if self.train_head and head not in adapted:
            for p in module.get_submodule(head).parameters():
                p.requires_grad_(True)
        return adapted, head

    @staticmethod
    def _param_dtype(module, name):
        for p in module.parameters():
            if p.is_floating_point():
                return p.dtype
        raise ValueError(f"{name}: the module has no floating-point parameter to train.")

    # -- fit ------------------------------------------------------------------------------------
    def _fit_network(self, X, Y, n_out, y_mean, y_scale, loss_fn, device):
        """Build, adapt, train and merge; sets the fitted attributes common to both estimators."""
        import torch

        from ..utils import Trainer
        from ._adapters import _AdapterLinear, merge_adapters

        name = type(self).__name__
        rng = check_random_state(self.random_state)
        init_gen = torch_generator(rng)
        adapter_seed = torch_seed(rng)
        shuffle_gen = torch_generator(rng)
        dropout_seed = torch_seed(rng)

        module = self._network(X, n_out, y_mean, y_scale, init_gen)
        flags = {n: p.requires_grad for n, p in module.named_parameters()}
        adapted, _ = self._prepare(module, adapter_seed)
        module.to(device)
        dtype = self._param_dtype(module, name)
        self._check_output(module, to_tensor(X[:2], device, dtype), n_out)

        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise ValueError(f"{name}: nothing to train: every parameter of the module is frozen.")
        n_trainable = sum(p.numel() for p in params)
        adapters = [m for m in module.modules() if isinstance(m, _AdapterLinear)]
        if self.dropout > 0 and adapters:
            dropout_gen = torch.Generator(device=device).manual_seed(dropout_seed)
            for m in adapters:
                m.dropout_generator = dropout_gen
        try:
            result = Trainer(
                loss=loss_fn, max_iter=self.max_iter, batch_size=self.batch_size, learning_rate=self.learning_rate,
                optimizer="adamw", weight_decay=self.weight_decay, early_stopping=self.early_stopping,
                validation_fraction=self.validation_fraction, n_iter_no_change=self.n_iter_no_change, tol=self.tol,
                device=device, random_state=shuffle_gen, verbose=self.verbose, name=name).fit(module, X, Y)
        finally:
            for m in adapters:
                m.dropout_generator = None

        merge_adapters(module)
        for n_, p in module.named_parameters():
            p.requires_grad_(flags.get(n_, True))
        module.eval()
        self.module_ = module.to("cpu")
        self.adapted_modules_ = list(adapted)
        self.n_trainable_params_ = int(n_trainable)
        self.loss_curve_ = list(result.loss_curve)
        self.validation_scores_ = None if result.validation_scores is None else list(result.validation_scores)
        self.best_loss_ = result.best_loss
        self.best_validation_score_ = result.best_validation_score
        self.n_iter_ = result.n_iter

    def _check_output(self, module, x, n_out):
        import torch

        name = type(self).__name__
        was_training = module.training
        module.eval()
        try:
            with torch.no_grad():
                out = module(x)
        except (RuntimeError, ValueError, TypeError, IndexError) as exc:
            raise ValueError(f"{name}: the module does not accept X with {x.shape[1]} features: {exc}") from exc
        finally:
            module.train(was_training)
        if not isinstance(out, torch.Tensor):
            raise TypeError(f"{name}: the module must return a tensor; it returned {type(out).__name__}.")
        width = 1 if out.ndim == 1 else (out.shape[1] if out.ndim == 2 else None)
        if out.shape[0] != x.shape[0] or width not in self._allowed_widths(n_out):
            raise ValueError(f"{name}: the module maps ({x.shape[0]}, {x.shape[1]}) inputs to outputs of shape "
                             f"{tuple(out.shape)}; expected ({x.shape[0]}, {self._allowed_widths(n_out)[0]}) "
                             f"for this y.")

    def _allowed_widths(self, n_out):
        return (n_out,)

    # -- predict --------------------------------------------------------------------------------
    def _raw_output(self, X):
        """Network output on X as a float64 array of shape (n_samples, width)."""
        import torch

        module = self.module_
        use_gpu = self.device_.startswith("cuda") and torch.cuda.is_available()  # else the CPU (a GPU fit unpickled)
        device = torch.device(self.device_ if use_gpu else "cpu")
        if use_gpu:
            module = copy.deepcopy(module).to(device)
        dtype = self._param_dtype(module, type(self).__name__)
        outs = []
        with self._torch_context(), torch.no_grad():
            for lo in range(0, X.shape[0], _PREDICT_CHUNK):
                outs.append(to_numpy(module(to_tensor(X[lo:lo + _PREDICT_CHUNK], device, dtype)), np.float64))
        out = np.concatenate(outs, axis=0)
        return out.reshape(X.shape[0], -1)

    def _validate_predict(self, X):
        return validate_data(self, as_numpy(X), reset=False, dtype=[np.float64, np.float32])


_COMMON_PARAMETERS = """
    module : torch.nn.Module, default=None
        The pre-trained network, mapping ``(n_samples, n_features)`` float
        tensors to {out_doc}. It is deep-copied in ``fit`` and never modified.
        ``None`` builds an MLP with ``hidden_layer_sizes`` and ``activation``
        (inputs standardised inside the network{none_doc}), trained from its
        random start by the chosen ``method``; ``method="full"`` on it is
        ordinary training, whose ``module_`` can be the ``module`` of a later
        fine-tuning.
    method : {{"dora", "lora", "full", "head"}}, default="dora"
        ``"dora"``: DoRA adapters (direction ``A``, ``B`` and magnitude ``m``);
        ``"lora"``: LoRA adapters (``A``, ``B``); ``"full"``: every parameter
        is trained; ``"head"``: only the last ``nn.Linear`` is trained.
    r : int, default=8
        Rank of the adapters (``"dora"``, ``"lora"``).
    lora_alpha : float, default=None
        Adapter scale numerator (peft's name; ``alpha`` in
        :func:`apply_adapters`); ``None`` means ``2 * r`` (scale 2).
    dropout : float, default=0.0
        Adapter dropout during training.
    use_rslora : bool, default=False
        Scale adapters by ``lora_alpha / sqrt(r)`` instead of ``lora_alpha / r``.
    norm : {{"dense", "factored"}}, default="dense"
        Row-norm computation of the DoRA layers (see :class:`DoRALinear`).
    target_modules : list of str, str, callable or None, default=None
        The ``nn.Linear`` layers that get adapters (see
        :func:`apply_adapters`); ``None``: all but the last one (the head).
    train_head : bool, default=True
        With ``"dora"``/``"lora"``, also train the head (the last
        ``nn.Linear`` in registration order) fully, unless it holds an adapter.
    hidden_layer_sizes : array-like of int, default=(64, 64)
        Hidden widths of the default MLP (used only when ``module`` is None).
    activation : {{"relu", "tanh", "gelu"}}, default="relu"
        Activation of the default MLP (used only when ``module`` is None).
    learning_rate : float, default=1e-3
        AdamW step size.
    weight_decay : float, default=0.0
        AdamW decoupled weight decay; ``learning_rate * weight_decay`` must
        be below 1 (each step multiplies the weights by one minus it).
    batch_size : int, default=64
        Mini-batch size (capped at the number of samples).
    max_iter : int, default=100
        Maximum number of epochs (passes over the training data). Named
        ``max_epochs`` in earlier development versions.
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the training rows and stop when
        the validation loss has not improved by ``tol`` for more than
        ``n_iter_no_change`` epochs; the network of the best validation loss
        is kept. Otherwise training stops on the training loss by the same
        rule (scikit-learn's MLP meaning).
    validation_fraction : float, default=0.1
        Share of the training rows held out when ``early_stopping``.
    n_iter_no_change : int, default=10
        Epochs without an improvement of at least ``tol`` tolerated; set it to
        ``max_iter`` to always run ``max_iter`` epochs.
    tol : float, default=1e-4
        Minimal decrease of the monitored loss counted as an improvement.
    device : {{"cpu", "auto", "cuda"}}, "cuda:<index>" or torch.device, default="cpu"
        Where training runs (``"auto"``: CUDA when available). Prediction
        uses CUDA too when asked for and available, else the CPU.
    random_state : int, RandomState instance or None, default=None
        Seeds the default MLP's initial weights, the adapters' ``A``, the
        mini-batch order, the validation split and the dropout masks (local generators; torch's
        global generator is left alone).
    verbose : int, default=0
        Print a per-epoch log (training and validation loss, seconds) when
        positive."""

_COMMON_ATTRIBUTES = """
    module_ : torch.nn.Module
        The fine-tuned network on the CPU, in eval mode, adapters merged: it
        has the base network's structure and parameter count.
    adapted_modules_ : list of str
        Names of the layers that were trained through adapters (empty for
        ``"full"`` and ``"head"``).
    n_trainable_params_ : int
        Number of parameters trained (adapters plus head, everything for
        ``"full"``).
    loss_curve_ : list of float
        Mean training loss (over samples) of each epoch (``history_`` in
        earlier development versions).
    validation_scores_ : list of float or None
        Validation loss of each epoch when ``early_stopping`` (lower is
        better, unlike scikit-learn's MLP, whose scores are accuracy or R²),
        else None.
    best_loss_ : float or None
        Smallest training loss (None when ``early_stopping``).
    best_validation_score_ : float or None
        Smallest validation loss (when ``early_stopping``).
    n_iter_ : int
        Number of epochs run.
    device_ : str
        Where training ran (``"cpu"`` or ``"cuda"``), ``device`` resolved.
    n_features_in_ : int
        Number of features seen in fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when X had string column names."""

_COMMON_NOTES = """
    The adapted weight of a DoRA layer is ``m * (W0 + s B A) / ||W0 + s B A||``
    with one norm per output unit over the input dimension (the ``nn.Linear``
    reading of the paper's column-wise norm, as in the official code and in
    peft); ``m`` starts at the row norms of ``W0`` and ``B`` at zero, so
    training starts exactly at the pre-trained network. The norm is detached
    in backpropagation (Section 4.3 of the paper). Bias terms of adapted
    layers stay frozen; the head keeps its bias trainable when trained.
    After training the adapters are merged, so prediction costs what the
    base network costs. Training uses AdamW with a constant step and shuffled
    mini-batches through the library's training layer, which stops by
    scikit-learn's MLP rules (on the training loss, or on a held-out
    validation loss with ``early_stopping=True``); ``lora_alpha = 2 r`` by default follows the
    paper's ``r = 32, alpha = 64`` pairing (named ``lora_alpha`` here because
    scikit-learn reads ``alpha`` as a penalty). The paper tunes LLaMA, VL-BART and
    LLaVA; here any torch network of ``nn.Linear`` layers works, and the
    default is a small MLP. Every parameter of ``module_`` has the
    ``requires_grad`` flag it had in ``module`` (``True`` for the default MLP)."""

_REFERENCES = """
    .. [1] Liu, S.-Y., Wang, C.-Y., Yin, H., Molchanov, P., Wang, Y.-C. F.,
       Cheng, K.-T. and Chen, M.-H., "DoRA: Weight-Decomposed Low-Rank
       Adaptation", ICML 2024."""


class DoRAClassifier(ClassifierMixin, _DoRAEstimator):
    __doc__ = f"""Fine-tune a pre-trained torch network for classification with DoRA.

    Weight-decomposed low-rank adaptation: each adapted ``nn.Linear`` learns a
    low-rank change of its weight's direction and a free magnitude per
    output unit. ``method`` also offers LoRA, full fine-tuning and head-only
    training on the same network, so the four compare under one API (and one
    ``GridSearchCV``).

    Read more in the :ref:`User Guide <finetune>`.

    Parameters
    ----------{_COMMON_PARAMETERS.format(out_doc="logits of shape ``(n_samples, n_classes)`` (or "
                                        "``(n_samples, 1)``/``(n_samples,)`` for two classes, read as the "
                                        "logit of ``classes_[1]``)", none_doc="")}

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels, sorted; output ``k`` of the network scores ``classes_[k]``.{_COMMON_ATTRIBUTES}

    See Also
    --------
    DoRARegressor : The same for regression.
    DoRALinear : The adapter layer, usable on its own.
    apply_adapters : Put adapters in a torch network by hand.

    Notes
    -----{_COMMON_NOTES} The loss is the cross-entropy (binary
    cross-entropy on a single logit).

    References
    ----------{_REFERENCES}

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_icml.finetune import DoRAClassifier
    >>> X, y = make_classification(n_samples=80, n_features=4, random_state=0)
    >>> clf = DoRAClassifier(r=2, hidden_layer_sizes=(16,), max_iter=20, random_state=0).fit(X, y)
    >>> clf.predict(X[:3]).shape
    (3,)
    >>> clf.module_.body[0]
    Linear(in_features=4, out_features=16, bias=True)
    """

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fine-tune a copy of the network on ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Class labels (numbers or strings).

        Returns
        -------
        self : object
            Fitted estimator.
        """
        import torch

        check_decoupled_weight_decay(type(self).__name__, self.learning_rate, self.weight_decay)
        with self._torch_fit_context() as ctx:
            X, y = validate_data(self, as_numpy(X), as_numpy(y), dtype=[np.float64, np.float32])
            check_classification_targets(y)
            self.classes_, y_idx = np.unique(y, return_inverse=True)
            n_classes = len(self.classes_)
            if n_classes < 2:
                raise ValueError(f"{type(self).__name__} needs samples of at least 2 classes; got 1 class "
                                 f"({self.classes_[0]!r}).")

            def loss_fn(out, target):
                if out.ndim == 1 or out.shape[1] == 1:
                    return torch.nn.functional.binary_cross_entropy_with_logits(
                        out.reshape(-1), target.to(out.dtype))
                return torch.nn.functional.cross_entropy(out, target)

            self._fit_network(X, y_idx.astype(np.int64), n_classes, None, None, loss_fn, ctx.device)
        return self

    def _allowed_widths(self, n_out):
        return (n_out, 1) if n_out == 2 else (n_out,)

    def decision_function(self, X):
        """Network logits.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            For two classes, the logit of ``classes_[1]`` against
            ``classes_[0]``; otherwise the logits.
        """
        check_is_fitted(self)
        out = self._raw_output(self._validate_predict(X))
        if len(self.classes_) == 2:
            return out[:, 0] if out.shape[1] == 1 else out[:, 1] - out[:, 0]
        return out

    def predict_proba(self, X):
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Softmax of the logits (sigmoid for a single binary logit).
        """
        check_is_fitted(self)
        out = self._raw_output(self._validate_predict(X))
        if out.shape[1] == 1:
            p = expit(out[:, 0])
            return np.column_stack([1.0 - p, p])
        return softmax(out, axis=1)

    def predict(self, X):
        """Most probable class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted labels.
        """
        check_is_fitted(self)
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.intp)]
        return self.classes_[np.argmax(scores, axis=1)]


class DoRARegressor(RegressorMixin, _DoRAEstimator):
    __doc__ = f"""Fine-tune a pre-trained torch network for (multi-output) regression with DoRA.

    Weight-decomposed low-rank adaptation: each adapted ``nn.Linear`` learns a
    low-rank change of its weight's direction and a free magnitude per
    output unit. ``method`` also offers LoRA, full fine-tuning and head-only
    training on the same network, so the four compare under one API (and one
    ``GridSearchCV``).

    Read more in the :ref:`User Guide <finetune>`.

    Parameters
    ----------{_COMMON_PARAMETERS.format(out_doc="predictions of shape ``(n_samples, n_outputs)`` in the units "
                                        "of ``y`` (``(n_samples,)`` also accepted for one output)",
                                        none_doc=", outputs mapped back to the units of ``y``")}

    Attributes
    ----------
    n_outputs_ : int
        Number of targets.{_COMMON_ATTRIBUTES}

    See Also
    --------
    DoRAClassifier : The same for classification.
    DoRALinear : The adapter layer, usable on its own.
    apply_adapters : Put adapters in a torch network by hand.

    Notes
    -----{_COMMON_NOTES} The loss is the mean squared error of the residuals
    divided by the training targets' standard deviations, so that targets of
    different scales weigh alike; the network itself predicts in the units of
    ``y``.

    References
    ----------{_REFERENCES}

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn_icml.finetune import DoRARegressor
    >>> X, y = make_regression(n_samples=80, n_features=4, random_state=0)
    >>> reg = DoRARegressor(method="lora", r=2, hidden_layer_sizes=(16,), max_iter=20,
    ...                     random_state=0).fit(X, y)
    >>> reg.predict(X[:3]).shape
    (3,)
    >>> reg.adapted_modules_
    ['body.0']
    """

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fine-tune a copy of the network on ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        import torch

        check_decoupled_weight_decay(type(self).__name__, self.learning_rate, self.weight_decay)
        with self._torch_fit_context() as ctx:
            X, y = validate_data(self, as_numpy(X), as_numpy(y), dtype=[np.float64, np.float32], multi_output=True,
                                 y_numeric=True)
            Y = np.asarray(y, dtype=np.float64)
            Y = Y.reshape(-1, 1) if Y.ndim == 1 else Y
            self.n_outputs_ = Y.shape[1]
            y_mean = Y.mean(axis=0)
            y_scale = Y.std(axis=0)
            y_scale[~(y_scale > 0)] = 1.0
            inv_scale, cache = 1.0 / y_scale, {}

            def loss_fn(out, target):
                if "w" not in cache:  # made once, on the training device and dtype
                    cache["w"] = torch.as_tensor(inv_scale, dtype=out.dtype, device=out.device)
                return (((out.reshape(target.shape) - target) * cache["w"]) ** 2).mean()

            self._fit_network(X, Y, self.n_outputs_, y_mean, y_scale, loss_fn, ctx.device)
        return self

    def predict(self, X):
        """Predict with the fine-tuned network.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            Predictions; 1-D when there is one target.
        """
        check_is_fitted(self)
        out = self._raw_output(self._validate_predict(X))
        return out[:, 0] if self.n_outputs_ == 1 else out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags
