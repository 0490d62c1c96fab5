"""``python -m bench.plot RESULT.json -o FILE.svg``: bench.omb's latency histograms as an
HdrHistogram-style latency-by-percentile plot, one panel per workload, one line per broker
(its rounds merged), end-to-end latency solid and publish latency dashed.

The x axis is the percentile on HdrHistogram's scale, 1 / (1 - q): 90%, 99%, 99.9%, ... are
equally spaced, so the tail the benchmark is about gets most of the width. The y axis is the
latency in milliseconds, logarithmic (josefk's, Tansu's and a cluster's tails lie decades apart).
Needs matplotlib (the ``bench`` extra).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench.histogram import Histogram, merged

KINDS = (("e2e", "-", "end to end"), ("publish", "--", "publish"))
TAIL = 99.999  # the last percentile drawn: beyond it 1 / (1 - q) is the sample count's noise


def curves(results: list[dict]) -> dict[str, dict[str, dict[str, Histogram]]]:
    """workload -> broker -> kind -> the rounds' histograms merged (only runs that were ok)."""
    out: dict[str, dict[str, dict[str, Histogram]]] = {}
    by_key: dict[tuple[str, str, str], list[Histogram]] = {}
    for r in results:
        if not r.get("ok") or "hist" not in r:
            continue
        for kind, _, _ in KINDS:
            if kind in r["hist"]:
                by_key.setdefault((r["workload"], r["broker"], kind), []).append(
                    Histogram.from_json(r["hist"][kind]))
    for (workload, broker, kind), hists in by_key.items():
        out.setdefault(workload, {}).setdefault(broker, {})[kind] = merged(hists)
    return out


def plot(result: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = curves(result["results"])
    if not data:
        raise SystemExit("no histograms in the result (was it written by bench.omb --json?)")
    workloads = sorted(data)
    colors = {b: f"C{n}" for n, b in enumerate(sorted({b for w in data.values() for b in w}))}
    cols = min(2, len(workloads))
    rows = -(-len(workloads) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.5 * cols, 4.5 * rows), squeeze=False)
    for ax in axes.flat[len(workloads):]:
        ax.set_visible(False)
    ticks = [0, 90, 99, 99.9, 99.99, 99.999]
    for ax, workload in zip(axes.flat, workloads):
        for broker, kinds in sorted(data[workload].items()):
            color = colors[broker]
            for kind, style, label in KINDS:
                hist = kinds.get(kind)
                if hist is None or not hist.count:
                    continue
                points = [(q, v) for q, v in hist.distribution() if q < TAIL] + [
                    (TAIL, hist.max)]
                ax.step([1 / (1 - q / 100) for q, _ in points],
                        [max(v, 1) / 1000 for _, v in points], style, where="post",
                        color=color, label=f"{broker} {label}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks([1 / (1 - t / 100) for t in ticks], [f"{t:g}%" for t in ticks])
        ax.set_xlim(1, 1 / (1 - TAIL / 100))
        ax.set_xlabel("percentile")
        ax.set_ylabel("latency, ms")
        ax.set_title(workload)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize="small")
    env = result.get("environment", {})
    fig.suptitle("bench.omb latency by percentile" + (
        f" ({env.get('cpu_count', '?')} cores, load {' '.join(env.get('loadavg', []))}, "
        f"josefk {env.get('josefk_commit', '?')})" if env else ""), fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.plot", description=__doc__.split("\n\n")[0])
    p.add_argument("result", type=Path, help="a JSON file written by python -m bench.omb --json")
    p.add_argument("-o", "--output", type=Path, required=True, help="the image (.svg or .png)")
    opts = p.parse_args(argv)
    try:
        result = json.loads(opts.result.read_text())
    except (OSError, json.JSONDecodeError) as e:
        p.error(f"cannot read {opts.result}: {e}")
    plot(result, opts.output)
    print(f"wrote {opts.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
