"""Example model configs written for sglaunch, addressable as example:NAME."""
