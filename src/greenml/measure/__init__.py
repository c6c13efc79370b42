"""Measuring: the Meter, measurements, power timelines, sensors and the events channel."""
