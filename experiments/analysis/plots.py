"""The report's figures (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def _figure(title: str, xlabel: str, ylabel: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    fig.subplots_adjust(left=0.15, right=0.97, bottom=0.14, top=0.9)  # cheaper than tight_layout
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    return fig, ax


def _save(fig, path: Path) -> str:
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path.name


def write_plots(result: dict, out_dir: Path) -> list[str]:
    """Write the figures of ``result`` (an `analyze_model` dict) into ``out_dir``; their names."""
    name = f"{result.get('model', '')} on {result.get('task', '')}"
    written = []
    curve = np.asarray(result["gradients"]["curve_mean_by_lag"])
    fig, ax = _figure(f"||dh_T/dh_(T-l)||_2, {name}", "lag l", "mean spectral norm")
    ax.semilogy(np.arange(1, len(curve) + 1), np.maximum(curve, 1e-300))
    written.append(_save(fig, out_dir / "gradients_through_time.png"))

    sens = np.asarray(result["gradients"]["input_sensitivity_by_lag"])
    fig, ax = _figure(f"input sensitivity, {name}", "lag l (1 = last input)",
                      "mean ||d logits / d x||_F")
    ax.semilogy(np.arange(1, len(sens) + 1), np.maximum(sens, 1e-300))
    written.append(_save(fig, out_dir / "input_sensitivity.png"))

    tr = result["truncation"]
    fig, ax = _figure(f"truncated evaluation, {name}", "window k (last k inputs)", tr["metric"])
    ax.semilogx(tr["k"], tr["score"], "o-", base=2, label="last k inputs")
    ax.axhline(tr["full"], color="k", ls="--", label="full sequence")
    ax.legend(fontsize=8)
    written.append(_save(fig, out_dir / "truncation.png"))

    fig, ax = _figure(f"||h_T - h_T^k||_2, {name}", "window k", "state gap")
    ax.loglog(tr["k"], np.maximum(tr["state_gap_max"], 1e-12), "o-", base=2, label="max measured")
    if tr["lemma1_bound"]:
        ax.loglog(tr["k"], tr["lemma1_bound"], "s--", base=2, label="Lemma 1 bound")
    ax.legend(fontsize=8)
    written.append(_save(fig, out_dir / "truncation_state_gap.png"))

    r2 = np.asarray(result["memory"]["r2_by_lag"])
    fig, ax = _figure(f"linear memory probe, {name}", "lag l (1 = last input)",
                      "R^2 of x_(T-l+1) from h_T")
    ax.plot(np.arange(1, len(r2) + 1), r2, label="from h_T")
    base = result["memory"].get("baseline_last_input_r2_by_lag")
    if base:
        ax.plot(np.arange(1, len(base) + 1), base, "--", label="from x_T alone (baseline)")
    ax.legend(fontsize=8)
    ax.set_ylim(min(-0.1, float(r2.min())), 1.05)
    written.append(_save(fig, out_dir / "memory_probe.png"))

    irnn = result["stability"].get("irnn")
    if irnn:
        eig = np.asarray(irnn["eigenvalues_sample"])
        fig, ax = _figure(f"eigenvalues of grad-phi PU - alpha I, {name}", "real", "imaginary")
        ax.scatter(eig[:, 0], eig[:, 1], s=8)
        ax.axvline(0.0, color="k", lw=0.8)
        written.append(_save(fig, out_dir / "irnn_eigenvalues.png"))
    return written
