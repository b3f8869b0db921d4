"""Privacy-utility trade-offs of differentially private algorithms."""

__version__ = "0.1.0"


class UserError(Exception):
    """A problem the user caused and can fix; its message is one sentence naming both."""
