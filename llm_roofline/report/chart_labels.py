"""Label placement for scatter charts (the roofline): short op names placed greedily in display
coordinates next to their points, away from other labels, markers and lines; labels of points that sit on
top of each other merged into one."""

from __future__ import annotations

import math

from .categories import short_name


def _label_text(p, multi_group) -> str:
    """Short op name; with the layer group appended when multi_group (a bool, or the set of op names that
    need it) says the name alone is ambiguous."""
    lab = short_name(p["name"])
    need = multi_group if isinstance(multi_group, bool) else p["name"] in multi_group
    if need and p["group"] != "model":
        lab += f" [{p['group']}]"
    return lab


def place_labels(ax, items, obstacles=(), avoid=(), fontsize=7.5):
    """Greedy label placement in display coordinates. items: (x, y, text) in data coordinates, most
    important first. For each label, candidate anchors on rings of growing radius around its point are
    scored by overlap with labels already placed, other texts (`obstacles`: display boxes), markers
    and the axes frame, and by its leader line crossing a text or another leader; the nearest free one wins,
    with a leader line when it sits away from the point. avoid: display points (markers, samples of lines)
    that labels should not cover."""
    from matplotlib.font_manager import FontProperties

    fig = ax.figure
    ab = ax.get_window_extent()
    scale = fig.dpi / 72.0
    renderer = fig.canvas.get_renderer()
    prop = FontProperties(size=fontsize)
    boxes = [tuple(b) for b in obstacles]
    pts = [tuple(ax.transData.transform((x, y))) for x, y, _ in items]
    avoid = [tuple(q) for q in avoid] + pts
    dirs = [(1, 0.6), (-1, 0.6), (1, -0.6), (-1, -0.6), (0, 1), (0, -1), (1, 0), (-1, 0)]
    rings = [6, 14, 24, 36, 50, 66, 84, 104]
    leaders: list[tuple] = []  # (x0, y0, x1, y1) of the leader lines drawn so far
    for (x, y, text), (px, py) in zip(items, pts):
        lines = text.split("\n")
        w = max(renderer.get_text_width_height_descent(line, prop, ismath=False)[0] for line in lines) + 4 * scale
        h = ((fontsize * 1.25) * len(lines) + 2) * scale
        best = None
        for r in rings:
            for ux, uy in dirs:
                n = math.hypot(ux, uy)
                dx, dy = r * ux / n, r * uy / n
                ax_, ay_ = px + dx * scale, py + dy * scale
                ha = "left" if ux > 0.3 else "right" if ux < -0.3 else "center"
                va = "bottom" if uy > 0.3 else "top" if uy < -0.3 else "center"
                x0 = ax_ if ha == "left" else ax_ - w if ha == "right" else ax_ - w / 2
                y0 = ay_ if va == "bottom" else ay_ - h if va == "top" else ay_ - h / 2
                box = (x0, y0, x0 + w, y0 + h)
                # text on text is the worst outcome: any overlap costs a whole label area, plus its size
                cost = sum(w * h + 5 * o for o in (_overlap(box, b) for b in boxes) if o > 0)
                cost += sum(0.3 * w * h for q in avoid if box[0] - 3 <= q[0] <= box[2] + 3
                            and box[1] - 3 <= q[1] <= box[3] + 3)
                if box[0] < ab.x0 or box[2] > ab.x1 or box[1] < ab.y0 or box[3] > ab.y1:
                    cost += 1e9
                padded = (box[0] - 2 * scale, box[1] - 2 * scale, box[2] + 2 * scale, box[3] + 2 * scale)
                cost += sum(3 * w * h for other in leaders if _segment_hits_box(other, padded))  # over a leader
                if r > 8:  # a leader line: through a text, or across another leader, reads as a wrong link
                    seg = (px, py, ax_, ay_)
                    cost += sum(3 * w * h for b in boxes if _segment_hits_box(seg, b))
                    cost += sum(3 * w * h for other in leaders if _segments_cross(seg, other))
                cost += r * 0.5  # prefer near
                if best is None or cost < best[0]:
                    best = (cost, dx, dy, ha, va, box, r)
            if best[0] <= r * 0.5 + 1e-9:  # free spot on this ring
                break
        _, dx, dy, ha, va, box, r = best
        if r > 8:
            leaders.append((px, py, px + dx * scale, py + dy * scale))
        pad = 4 * scale  # keep a gap: two labels that touch read as one ("downqkv_proj")
        boxes.append((box[0] - pad, box[1] - pad / 2, box[2] + pad, box[3] + pad / 2))
        t = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize, ha=ha, va=va,
                        arrowprops=dict(arrowstyle="-", lw=0.5, color="0.45", shrinkA=0, shrinkB=3) if r > 8 else None)
        t.set_in_layout(False)


def _segment_hits_box(seg, box) -> bool:
    """Whether the segment (x0, y0, x1, y1) passes through the box (x0, y0, x1, y1), its ends (the outer 1/16 at
    each end) excluded: Liang-Barsky clipping, exact (a sampled check misses a leader that clips a corner)."""
    x0, y0, x1, y1 = seg
    dx, dy = x1 - x0, y1 - y0
    lo, hi = 1 / 16, 15 / 16
    for p, q in ((-dx, x0 - box[0]), (dx, box[2] - x0), (-dy, y0 - box[1]), (dy, box[3] - y0)):
        if p == 0:
            if q < 0:
                return False
            continue
        t = q / p
        if p < 0:
            lo = max(lo, t)
        else:
            hi = min(hi, t)
    return lo <= hi


def _segments_cross(a, b) -> bool:
    """Whether two segments (x0, y0, x1, y1) cross (strictly: touching ends do not count)."""
    def side(p, q, r):
        return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])

    p1, p2, q1, q2 = a[:2], a[2:], b[:2], b[2:]
    return side(p1, p2, q1) * side(p1, p2, q2) < 0 and side(q1, q2, p1) * side(q1, q2, p2) < 0


def _overlap(a, b) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def cluster_labels(ax, label, multi, px=6.0):
    """Merge labels of points that sit on top of each other (within px display pixels) into one label,
    e.g. decode's weight-bound projections, which share one intensity: 'qkv_proj, o_proj, up_gate'."""
    items: list[list] = []  # [x, y, display point, names]
    for p in label:
        x, y = p["intensity"], p["achieved_flops_per_s"] / 1e12
        d = ax.transData.transform((x, y))
        for it in items:
            if math.hypot(*(d - it[2])) < px:
                it[3].append(_label_text(p, multi))
                break
        else:
            items.append([x, y, d, [_label_text(p, multi)]])
    out = []
    for x, y, _, names in items:
        names = list(dict.fromkeys(names))
        text = ", ".join(names) if len(names) <= 3 else ", ".join(names[:3]) + "\n" + ", ".join(names[3:])
        out.append((x, y, text))
    return out


