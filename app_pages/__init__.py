"""Streamlit pages of the calculator; app.py is the entry point."""
