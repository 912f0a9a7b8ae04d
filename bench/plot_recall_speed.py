#!/usr/bin/env python3
"""Recall-QPS plots and a leader table from bench_recall_speed's CSV.

  bench/plot_recall_speed.py CSV OUT_DIR [--png]

For each (data set, index type) of the CSV: OUT_DIR/recall_speed_<data>_<index>.svg
(and .png with --png), recall@10 on x, single-thread QPS on y (log scale), one line per
system and refine setting: its Pareto frontier (no other setting of that line has both
higher recall and more QPS), the other settings as dots; build time and index size in
the legend. OUT_DIR/recall_speed_summary.md: for each plot and recall level, each
line's best QPS at or above that recall, and which system leads there.
Needs gnuplot (Debian's gnuplot-nox); nothing else beyond Python's standard library.
"""
import csv
import os
import subprocess
import sys
import tempfile
from collections import OrderedDict

LEVELS = [0.25, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99]
COLOURS = {"lancet": "#1f5fbf", "LanceDB": "#e07b00", "FAISS": "#2a9d3a"}


def frontier(points):
    """The (recall, qps) points no other point beats on both, by increasing recall."""
    best, out = -1.0, []
    for r, q in sorted(points, key=lambda p: (-p[0], -p[1])):
        if q > best:
            out.append((r, q))
            best = q
    return sorted(out)


def best_at(front, level):
    qs = [q for r, q in front if r >= level]
    return max(qs) if qs else None


def series_name(row):
    refine = int(row["refine"])
    return row["system"] + (f" refine {refine}" if refine else "")


def load(path):
    """{(dataset, index): {series: {"points": [...], "build_s", "bytes", "system"}}} in file order."""
    plots = OrderedDict()
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            s = plots.setdefault((row["dataset"], row["index"]), OrderedDict()).setdefault(
                series_name(row), {"points": [], "system": row["system"]})
            s["points"].append((float(row["recall"]), float(row["qps"])))
            s["build_s"], s["bytes"] = float(row["build_s"]), int(row["index_bytes"])
    return plots


def gnuplot_script(title, series, files, out, terminal):
    lines = [terminal, f"set output '{out}'", f"set title '{title}' noenhanced",
             "set xlabel 'recall@10' noenhanced", "set ylabel 'queries per second, one thread' noenhanced", "set logscale y",
             "set grid", "set key bottom left noenhanced font ',9'", "set xrange [*:1.005]"]
    plot = []
    for (name, s), (front_file, all_file) in zip(series.items(), files):
        colour = COLOURS.get(s["system"], "#777777")
        dash = "dt 2" if "refine" in name else "dt 1"
        label = f"{name} (build {s['build_s']:.1f} s, {s['bytes'] / 1e6:.1f} MB)"
        plot.append(f"'{front_file}' using 1:2 with linespoints lw 2 pt 7 ps 0.6 {dash} lc rgb '{colour}' "
                    f"title '{label}'")
        plot.append(f"'{all_file}' using 1:2 with points pt 1 ps 0.5 lc rgb '{colour}' notitle")
    lines.append("plot " + ", \\\n     ".join(plot))
    return "\n".join(lines) + "\n"


def draw(key, series, out_dir, png, tmp):
    data, index = key
    files = []
    for i, s in enumerate(series.values()):
        front_file, all_file = os.path.join(tmp, f"f{i}.dat"), os.path.join(tmp, f"a{i}.dat")
        with open(front_file, "w") as f:
            f.writelines(f"{r} {q}\n" for r, q in frontier(s["points"]))
        with open(all_file, "w") as f:
            f.writelines(f"{r} {q}\n" for r, q in s["points"])
        files.append((front_file, all_file))
    base = os.path.join(out_dir, f"recall_speed_{data}_{index}")
    title = f"{index}, {data}"
    terminals = [("set terminal svg size 720,480 dynamic font 'sans,11'", base + ".svg")]
    if png:
        terminals.append(("set terminal pngcairo size 960,640 dashed font 'sans,10'", base + ".png"))
    for terminal, out in terminals:
        script = os.path.join(tmp, "plot.gp")
        with open(script, "w") as f:
            f.write(gnuplot_script(title, series, files, out, terminal))
        subprocess.run(["gnuplot", script], check=True)
    return base


def summary(key, series):
    data, index = key
    fronts = {name: frontier(s["points"]) for name, s in series.items()}
    out = [f"### {index}, {data}", "",
           "| recall >= | " + " | ".join(fronts) + " | leader | lancet / best other |",
           "| --- |" + " --- |" * (len(fronts) + 2)]
    for level in LEVELS:
        best = {name: best_at(front, level) for name, front in fronts.items()}
        cells = [f"{q:,.0f}" if q else "-" for q in best.values()]
        reached = {n: q for n, q in best.items() if q}
        if not reached:
            continue
        leader = max(reached, key=reached.get)
        ours = max((q for n, q in reached.items() if n.startswith("lancet")), default=None)
        others = max((q for n, q in reached.items() if not n.startswith("lancet")), default=None)
        ratio = f"{ours / others:.2f}x" if ours and others else "-"
        out.append(f"| {level} | " + " | ".join(cells) + f" | {leader} | {ratio} |")
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) < 3 or argv[1].startswith("-"):
        sys.exit(__doc__)
    path, out_dir, png = argv[1], argv[2], "--png" in argv[3:]
    os.makedirs(out_dir, exist_ok=True)
    plots = load(path)
    if not plots:
        sys.exit(f"{path}: no rows")
    text = ["## Recall against QPS: best QPS at or above each recall", "",
            "Frontier of each line (higher recall and more QPS beat it nowhere); '-': the line never reaches "
            "that recall. lancet / best other: lancet's best line against the best other system's.", ""]
    with tempfile.TemporaryDirectory() as tmp:
        for key, series in plots.items():
            print(draw(key, series, out_dir, png, tmp) + ".svg")
            text.append(summary(key, series))
    with open(os.path.join(out_dir, "recall_speed_summary.md"), "w") as f:
        f.write("\n".join(text))
    print(os.path.join(out_dir, "recall_speed_summary.md"))


if __name__ == "__main__":
    main(sys.argv)
