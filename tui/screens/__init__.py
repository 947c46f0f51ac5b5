"""Screens and modals of the sglaunch app."""
