"""The timeline: instants, the active timeline (read, and changed by its one writer), and the
archived history: archive files on table version 6, the LSM timeline on 8 and 9."""
