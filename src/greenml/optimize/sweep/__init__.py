"""The software-knob sweep: precision, batch size, compile and loader workers, each measured."""
