"""The timeline: instants, the active and the archived timeline."""
