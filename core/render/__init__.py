"""What a page and a sweep report both draw, without Streamlit: escaping untrusted text for Markdown
and HTML (``text``), answer spans marked in a context (``highlight``), and the Heatmaps figures
(``heatmap``, ``sweep_figures``, ``curve_figure``). components/ re-exports them for the pages."""
