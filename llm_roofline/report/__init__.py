"""Report layer: tables (table.py, text.py, markdown.py), exports (export.py), charts (plot.py and the plot_*
modules it re-exports) and the one module that runs the estimator for a report (build.py). Units are converted
only here."""
