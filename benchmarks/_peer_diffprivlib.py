"""Run diffprivlib's KMeans on the jobs the benchmark wrote; runs in its own virtualenv.

diffprivlib 0.6.6 does not import beside scikit-learn 1.9 (``sklearn.tree._tree.DOUBLE`` is gone), so
``bench_private_kmeans.py`` runs this file with the interpreter of a virtualenv holding diffprivlib and
scikit-learn 1.6. Input: an ``.npz`` with the datasets (``X_<name>``) and a JSON list of jobs; output: an
``.npz`` with the fitted centres and fit seconds of every job, in the jobs' order. Only numpy, json and
diffprivlib are used here, so nothing of sklearn_icml is imported.
"""

import json
import sys
import time
import warnings

import numpy as np


def main(data_path, jobs_path, out_path):
    import diffprivlib
    from diffprivlib.models import KMeans

    data = np.load(data_path)
    with open(jobs_path) as f:
        jobs = json.load(f)
    out = {"diffprivlib_version": np.array(diffprivlib.__version__)}
    for i, job in enumerate(jobs):
        X = data["X_" + job["dataset"]]
        lower, upper = job["bounds"]
        bounds = (np.full(X.shape[1], lower, dtype=float), np.full(X.shape[1], upper, dtype=float))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            km = KMeans(n_clusters=job["k"], epsilon=job["epsilon"], bounds=bounds,
                        random_state=job["seed"]).fit(X)
            seconds = time.perf_counter() - start
        out[f"centers_{i}"] = np.asarray(km.cluster_centers_, dtype=np.float64)
        out[f"seconds_{i}"] = np.array(seconds)
    np.savez(out_path, **out)


if __name__ == "__main__":
    main(*sys.argv[1:4])
