"""Regenerate the curated example reports in the repository's reports/ (maintainers):

    PYTHONPATH=. python benchmarks/regenerate_reports.py [--out DIR] [--only NAME ...]

The examples themselves live in llm_roofline.report.examples (which prints nothing); this script picks the
repository's reports/ folder, runs them and says what it wrote. Review the diff of summary.json and ops.csv.
"""

import argparse
import sys
from pathlib import Path

from llm_roofline.errors import RooflineError
from llm_roofline.report.examples import example_names, regenerate

REPO_REPORTS = Path(__file__).resolve().parents[1] / "reports"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(REPO_REPORTS), help="folder for the reports (default: %(default)s)")
    ap.add_argument("--only", nargs="*", metavar="NAME", help=f"reports to regenerate (default: all): "
                                                              f"{', '.join(example_names())}")
    args = ap.parse_args(argv)
    try:
        paths = regenerate(Path(args.out), args.only)
    except RooflineError as e:
        print(f"regenerate_reports: {e}", file=sys.stderr)
        return 2
    for p in paths:
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
