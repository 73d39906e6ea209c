"""Tour entries of the bandits family: Borda regret of the paper's agents against feature-free baselines."""

from ._base import TourEntry, TourResult


def _run_borda_etc(device="cpu", quick=False):
    from ..bandits import BordaETC, ETCBorda, GLMDuelingEnv, simulate

    horizon = 10_000 if quick else 30_000
    env = GLMDuelingEnv.hard_instance(d=4, delta=0.05, link="linear", random_state=0)
    ours = simulate(BordaETC(link="linear", random_state=0), env, horizon, random_state=0)
    base = simulate(ETCBorda(random_state=0), env, horizon, random_state=0)
    return TourResult(metric=f"regret, T={horizon}", score=float(ours.regret[-1]),
                      baseline="ETC-Borda", baseline_score=float(base.regret[-1]),
                      fit_seconds=ours.seconds, higher_is_better=False)


def _run_borda_exp3(device="cpu", quick=False):
    from ..bandits import DEXP3, BordaEXP3, GLMDuelingEnv, simulate

    horizon = 3_000 if quick else 10_000
    env = GLMDuelingEnv.hard_instance(d=4, delta=0.05, link="linear", random_state=0)
    ours = simulate(BordaEXP3(random_state=0), env, horizon, random_state=0)
    base = simulate(DEXP3(random_state=0), env, horizon, random_state=0)
    return TourResult(metric=f"regret, T={horizon}", score=float(ours.regret[-1]),
                      baseline="DEXP3", baseline_score=float(base.regret[-1]),
                      fit_seconds=ours.seconds, higher_is_better=False)


TOUR_ENTRIES = [
    TourEntry("BordaETC", "S11", "find the Borda winner of 32 items by duels (hard instance)", _run_borda_etc),
    TourEntry("BordaEXP3", "S11", "adversarial-setting agent on the same hard instance", _run_borda_exp3),
]
