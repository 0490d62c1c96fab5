"""An error's cause on one line, for the connectors' ConnectExceptions: a database driver's
first line, without SQLAlchemy's statement echo and background link; an object store's,
without the request obstore prints after it."""


def one_line(error: BaseException) -> str:
    cause = getattr(error, "orig", None) or error
    lines = [line.strip() for line in str(cause).strip().splitlines() if line.strip()]
    return lines[0] if lines else type(cause).__name__
