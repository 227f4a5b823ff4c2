"""QA Robustness Explorer: all logic. Nothing here imports Streamlit (except cached loaders)."""
