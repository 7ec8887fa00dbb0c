"""The doctor's own checks: what part of the input was not read (never hidden behind "ok")."""
