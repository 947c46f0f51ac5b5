"""Widgets of the sglaunch app."""
