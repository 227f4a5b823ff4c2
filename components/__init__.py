"""Reusable Streamlit renderers and the app's shared state."""
