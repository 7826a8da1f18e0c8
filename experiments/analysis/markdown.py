"""report.md from an `analyze_run` result."""

from __future__ import annotations


def _fmt(value, digits: int = 4) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _stability(result: dict) -> list[str]:
    c = result["stability"]["contraction"]
    rec = result["stability"]["recurrence"]
    lines = ["## Stability (000, 001, 004)", "",
             f"Empirical contraction constant ||ds_t/ds_(t-1)||_2 over {c['samples']} visited "
             f"(state, input) pairs (state size {result['state_dim']}):", "",
             "| max | p95 | mean | 001 regime (of max, tol "
             f"{c['regime_tolerance']}) | information-loss rate N_x log(max) |",
             "|---|---|---|---|---|",
             f"| {_fmt(c['max'])} | {_fmt(c['p95'])} | {_fmt(c['mean'])} | {c['regime']} | "
             f"{_fmt(c['information_loss_nats_per_step'])} nats/step |", "",
             f"Recurrence: {rec['matrix']}."]
    if "sigma_max" in rec:
        lines.append(f"sigma_max = {_fmt(rec['sigma_max'])}; activation Lipschitz "
                     f"{_fmt(rec['activation_lipschitz'])}; product "
                     f"{_fmt(rec.get('lipschitz_times_sigma_max'))} (000: < 1 guarantees "
                     "contraction).")
    mf = rec.get("memory_factor")
    if mf:
        lines.append(f"002 memory factor at z = sigma_1 sigma_max = {_fmt(mf['z'])}, T = {mf['T']}:"
                     f" mu_0 = {_fmt(mf['mu0'])}, mu_1 = {_fmt(mf['mu1'])}"
                     + (" (**z >= 1: exploding regime**)" if mf["exploding"] else "") + ".")
    mfm = rec.get("memory_factor_measured")
    if mfm:
        lines.append(
            "002's memory factor (stated for h_t = sigma(W h_(t-1) + U x_t)) is not taken at "
            "sigma_1 sigma_max here: this cell adds h_(t-1) to a scaled update, so sigma_max "
            "is not its step's Lipschitz constant. At the measured contraction constant z = "
            f"{_fmt(mfm['z'])}, T = {mfm['T']}: mu_0 = {_fmt(mfm['mu0'])}, mu_1 = "
            f"{_fmt(mfm['mu1'])}" + (" (z >= 1: 002's worst-case bounds grow like e^(Omega(T)); "
                                     "the per-step maxima do not compound: the gradients "
                                     "section's ||dh_T/dh_1|| measures what the product of "
                                     "the Jacobians does)" if mfm["exploding"] else "") + ".")
    if result.get("state_clip") is not None:
        lines.append(f"The state is clipped to [0, {_fmt(result['state_clip'])}] "
                     "(state_clip): it stays bounded whatever these constants are.")
    diag = rec.get("diagonal")
    if diag:
        for label in ("measured", "bound"):
            if label in diag:
                m = diag[label]
                lines.append(f"DiagonalRNN ({label}: z = sigma_1 {'max|w_i|' if label == 'measured' else 'alpha_m'}"
                             f" = {_fmt(m['z'])}): mu_0,T = {_fmt(m['mu0'])}, mu_1,T = "
                             f"{_fmt(m['mu1'])}" + (" **(z >= 1)**" if m["exploding"] else "") + ".")
    irnn = result["stability"].get("irnn")
    if irnn:
        lines += ["", "iRNN (004): mean fixed-point residual ||F(g_k)|| for k = 0.."
                  f"{irnn['k']} (model) and {len(irnn['residual_by_recursion']) - irnn['k'] - 1} "
                  "more recursions with eta_K (diagnostic):",
                  "", " ".join(_fmt(r, 3) for r in irnn["residual_by_recursion"]), "",
                  f"measured rate per recursion {_fmt(irnn['measured_rate'])}; L_U = "
                  f"{_fmt(irnn['L_U'])}.", "",
                  "| recursion | eta | max ||I + eta dF/dg|| | mean | Prop. 2 bound 1 - alpha eta + eta L_U |",
                  "|---|---|---|---|---|"]
        lines += [f"| {lc['k']} | {_fmt(lc['eta'])} | {_fmt(lc['max'])} | {_fmt(lc['mean'])} | "
                  f"{_fmt(lc['prop2_bound'])} |" for lc in irnn["local_contraction"]]
        lines += ["", f"Eigenvalues of grad-phi P U - alpha I: max real part "
                  f"{_fmt(irnn['eigen_max_real'])}; all negative at "
                  f"{100 * irnn['eigen_all_negative_fraction']:.1f}% of sampled states (A.7.6)."]
    return lines + [""]


def _power(base: float, exponent: int) -> float:
    try:
        return float(base) ** exponent
    except OverflowError:
        return float("inf")


def summary(result: dict) -> list[str]:
    """The few lines ``zoo analyze`` prints beside the report's path."""
    c, g = result["stability"]["contraction"], result["gradients"]
    rec = result["stability"]["recurrence"]
    mf = rec.get("memory_factor") or rec.get("memory_factor_measured")
    clip = result.get("state_clip")
    lines = [f"step Jacobian ||ds_t/ds_(t-1)||: max {_fmt(c['max'], 3)}, mean "
             f"{_fmt(c['mean'], 3)} (001 regime of the max: {c['regime']})"
             + (f"; state bounded in [0, {_fmt(clip)}]" if clip is not None else ""),
             f"gradient through time ||dh_T/dh_1|| = {_fmt(g['dhT_dh1_mean'], 3)} over "
             f"T = {result['timesteps']} steps (the per-step max would allow "
             f"{_fmt(c['max'], 3)}^{result['timesteps'] - 1} = "
             f"{_fmt(_power(c['max'], result['timesteps'] - 1), 3)}: what the product does is "
             "this measured value)"]
    if mf:
        lines.append(f"002 memory factor at z = {_fmt(mf['z'], 3)}"
                     f"{' (measured)' if 'memory_factor' not in rec else ''}: "
                     f"mu_0,T = {_fmt(mf['mu0'], 3)}")
    tr = result.get("truncation", {})
    if tr.get("smallest_k_within_0.5") is not None:
        lines.append(f"smallest window within 0.5 points of the full sequence: k = "
                     f"{tr['smallest_k_within_0.5']} of {result['timesteps']}")
    return lines


def _gradients(result: dict) -> list[str]:
    g = result["gradients"]
    return ["## Gradients through time (004 Fig. 3b, 8; 000 Fig. 2)", "",
            f"||dh_T/dh_1|| = {_fmt(g['dhT_dh1_mean'])}, ||dh_T/dh_(T-1)|| = "
            f"{_fmt(g['dhT_dhTm1_mean'])} (means over sequences), ratio r_T = "
            f"{_fmt(g['ratio_geomean'])} (geometric mean); {g['norm']}.",
            f"Input sensitivity falls below 1% of its lag-1 value at lag "
            f"{_fmt(g['input_sensitivity_lag_below_1pct'])}.", "",
            "![](gradients_through_time.png) ![](input_sensitivity.png)", ""]


def _truncation(result: dict) -> list[str]:
    tr = result["truncation"]
    unit = "%" if tr["metric"] == "accuracy" else ""
    scale = 100 if tr["metric"] == "accuracy" else 1
    lines = ["## Truncation (000 Lemma 1, Prop. 1)", "",
             f"Full sequence: {tr['metric']} {scale * tr['full']:.4g}{unit}. "
             f"Smallest window within 0.5 points: k = {_fmt(tr['smallest_k_within_0.5'])} of "
             f"{result['timesteps']}.", "",
             "| k | " + tr["metric"] + " | max ||h_T - h_T^k|| | Lemma 1 bound |", "|---|---|---|---|"]
    bound = tr["lemma1_bound"] or [None] * len(tr["k"])
    lines += [f"| {k} | {scale * s:.4g}{unit} | {_fmt(gap)} | {_fmt(b)} |"
              for k, s, gap, b in zip(tr["k"], tr["score"], tr["state_gap_max"], bound)]
    lines += ["", f"lambda = {_fmt(tr['lambda'])}, L_x = {_fmt(tr['L_x'])}, B_x = "
              f"{_fmt(tr['B_x'])}, L_f = {_fmt(tr['L_f'])}; k(eps) = "
              + ", ".join(f"{_fmt(v)} (eps {e})" for e, v in tr["k_eps"].items())
              + " (n/a unless lambda < 1; evaluated at the empirical constants)."]
    k = tr["smallest_k_within_0.5"]
    if k is not None and k < result["timesteps"]:
        lines.append(f"A device may run a sliding window of the last {k} inputs (restart from "
                     "h = 0 each window): bounded latency and memory at this accuracy.")
    return lines + ["", "![](truncation.png) ![](truncation_state_gap.png)", ""]


def render(result: dict) -> str:
    m = result["memory"]
    lines = [f"# zoo analyze: {result['model']} on {result['task']}", "",
             f"Run `{result['run_dir']}`; {result['sequences']} validation sequences of "
             f"{result['timesteps']} steps; cell {result['cell']}; "
             f"{result['seconds']['total']}s.", ""]
    lines += _stability(result) + _gradients(result) + _truncation(result)
    lines += ["## Memory probe (003 Sec. 4.4)", "",
              f"Ridge ({m['ridge']}) from h_T to x_(T-l+1), {m['folds']}-fold R^2: lag 1 "
              f"{_fmt(m['r2_by_lag'][0], 3)}, lag 2 {_fmt(m['r2_by_lag'][1], 3)}, lag 8 "
              f"{_fmt(m['r2_by_lag'][min(7, len(m['r2_by_lag']) - 1)], 3)}; last lag with R^2 > 0.5:"
              f" {_fmt(m['last_lag_r2_above_0.5'])}.",
              "Baseline, the same probe from the last input x_T alone (input autocorrelation, "
              f"no memory): lag 8 {_fmt(m['baseline_last_input_r2_by_lag'][min(7, len(m['r2_by_lag']) - 1)], 3)}"
              ".", "", "![](memory_probe.png)", ""]
    if "irnn_eigenvalues.png" in result.get("plots", []):
        lines += ["![](irnn_eigenvalues.png)", ""]
    return "\n".join(lines)
