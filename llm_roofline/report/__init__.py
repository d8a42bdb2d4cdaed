"""Report layer: tables (table.py), exports (export.py) and charts (plot.py). Units are converted only here."""
