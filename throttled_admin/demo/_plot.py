"""The demo's picture: each quota entity's admitted mutations over time against its quota envelope
B + R t (KIP-599: a full bucket of B = 11 R, refilled at R). A line under its envelope means the client
never asked for more than the quota allowed."""

from __future__ import annotations

from pathlib import Path

from throttled_admin.demo._fleet import BASELINE, CLUSTERS, Admitted

__all__ = ["plot_admitted"]

_COLOURS = {"payments": "tab:blue", "search": "tab:orange", "analytics": "tab:green", BASELINE.user: "tab:red"}


def plot_admitted(series: list[Admitted], path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display needed
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(CLUSTERS), figsize=(12, 6), sharey=True, constrained_layout=True)
    end = max((s.steps[-1][0] for s in series if s.steps), default=1.0) * 1.05
    for ax, cluster in zip(axes, CLUSTERS, strict=True):
        for entity in (s for s in series if s.cluster == cluster and s.steps):
            colour = _COLOURS.get(entity.tenant, "tab:gray")
            # the unpaced baseline is admitted at once: its line stays there, over the envelope, to the end
            last = [] if entity.paced else [(end, entity.steps[-1][1])]
            times = [0.0] + [t for t, _ in [*entity.steps, *last]]
            counts = [0] + [n for _, n in [*entity.steps, *last]]
            who = entity.tenant if entity.paced else f"{BASELINE.tenant.name} unpaced"
            throttled = "" if entity.paced else f", throttled {entity.max_throttle_ms / 1000:.1f} s"
            # The admitted line is wide and pale, the envelope thin on top: where the client paces exactly to
            # the quota the two coincide, and any overshoot shows as pale line above the dashes.
            ax.step(
                times,
                counts,
                where="post",
                color=colour,
                linewidth=4,
                alpha=0.45,
                zorder=2,
                label=f"{who}: admitted ({entity.steps[-1][1]} mutations{throttled})",
            )
            rate = entity.rate
            start, finish = entity.steps[0][0], entity.steps[-1][0]
            stop = min(end, finish + 0.08 * end) if entity.paced else end
            ax.plot(
                [start, stop],
                [11 * rate, 11 * rate + rate * (stop - start)],
                linestyle="--",
                color=colour,
                linewidth=1.5,
                zorder=3,
                label=f"{who}: quota envelope {11 * rate:g} + {rate:g}/s x t",
            )
        ax.set_title(f"cluster {cluster}")
        ax.set_xlabel("seconds since the pipeline started")
        ax.set_xlim(0, end)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mutations admitted (partitions)")
    top = max((s.steps[-1][1] for s in series if s.steps), default=1)
    axes[0].set_ylim(0, top * 1.15)
    # One legend for both panels, under them: the lines fill the panels' corners.
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=9)
    fig.suptitle(
        f"{title}\ndashed: the quota envelope B + R t of each tenant (KIP-599, B = 11 R)\nred: the "
        f"{BASELINE.tenant.name} rows of {BASELINE.cluster} sent at once by bare confluent-kafka, no pacing"
    )
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
