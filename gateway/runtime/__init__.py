"""Running a call: its deadline, running a coroutine at once, and keeping secrets out of what is shown.
Below: encoding, errors.

The face, what other rooms may import: deadlines, eager, secrets.
"""

# Module names, not re-exports: importing the room imports none of them.
__all__ = ["deadlines", "eager", "secrets"]
