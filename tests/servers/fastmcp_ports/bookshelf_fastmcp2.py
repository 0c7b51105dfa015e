"""A reading list, written for FastMCP 2.x the way its users write servers (our own text).

Pydantic models in and out, dates and datetimes, Context logging and progress, an elicitation
before a delete, a resource, a resource template and a prompt.  tests/server/test_fastmcp_ports.py
changes only its import line to mcp_ref's and serves it over stdio.
"""

from datetime import UTC, date, datetime
from typing import Annotated, Literal

from fastmcp import Context, FastMCP
from pydantic import BaseModel, Field

mcp = FastMCP("Bookshelf", instructions="A reading list: add books, rate them, pick the next.")

Status = Literal["to-read", "reading", "done"]
#: When every book here was added: a fixed moment, so the answers are the same on every run.
ADDED_AT = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


class NewBook(BaseModel):
    title: Annotated[str, Field(min_length=1, max_length=200)]
    author: str
    published: date


class Book(NewBook):
    id: int
    added_at: datetime
    status: Status = "to-read"
    stars: int | None = None


class Confirmation(BaseModel):
    confirm: bool


SHELF: dict[int, Book] = {}


def shelve(new: NewBook) -> Book:
    book = Book(id=len(SHELF) + 1, added_at=ADDED_AT, **new.model_dump())
    SHELF[book.id] = book
    return book


@mcp.tool
def add_book(book: NewBook) -> Book:
    """Put a book on the shelf."""
    return shelve(book)


@mcp.tool(tags={"read"}, annotations={"readOnlyHint": True})
def list_books(status: Status | None = None) -> list[Book]:
    """The books on the shelf; only those with a status if one is given."""
    return [book for book in SHELF.values() if status is None or book.status == status]


@mcp.tool
def start_reading(book_id: int) -> Book:
    """Mark a book as being read."""
    book = SHELF.get(book_id)
    if book is None:
        raise ValueError(f"There is no book {book_id} on the shelf")
    book.status = "reading"
    return book


@mcp.tool(name="rate", description="Finish a book and give it one to five stars.")
def rate_book(book_id: int, stars: Annotated[int, Field(ge=1, le=5)]) -> Book:
    book = SHELF.get(book_id)
    if book is None:
        raise ValueError(f"There is no book {book_id} on the shelf")
    book.status, book.stars = "done", stars
    return book


@mcp.tool
def published_before(year: int) -> list[str]:
    """The titles published before January 1st of a year."""
    return [book.title for book in SHELF.values() if book.published < date(year, 1, 1)]


@mcp.tool
async def import_books(author: str, titles: list[str], ctx: Context) -> int:
    """Add several books by one author, reporting progress."""
    await ctx.info(f"Importing {len(titles)} books by {author}")
    for done, title in enumerate(titles, start=1):
        shelve(NewBook(title=title, author=author, published=date(2000, 1, 1)))
        await ctx.report_progress(progress=done, total=len(titles))
    await ctx.debug("Import finished")
    return len(titles)


@mcp.tool
async def remove_book(book_id: int, ctx: Context) -> str:
    """Take a book off the shelf, once the user confirms."""
    book = SHELF.get(book_id)
    if book is None:
        raise ValueError(f"There is no book {book_id} on the shelf")
    answer = await ctx.elicit(f"Remove {book.title!r}?", response_type=Confirmation)
    if answer.action == "accept" and answer.data.confirm:
        del SHELF[book_id]
        await ctx.warning(f"Removed {book.title}")
        return f"Removed {book.title}"
    return f"Kept {book.title}"


@mcp.resource("shelf://summary", mime_type="application/json")
def summary() -> dict:
    """How many books there are in each state."""
    counts = {"to-read": 0, "reading": 0, "done": 0}
    for book in SHELF.values():
        counts[book.status] += 1
    return counts


@mcp.resource("shelf://books/{book_id}")
def book_card(book_id: int) -> str:
    """One book, as a line of text."""
    book = SHELF[book_id]
    return f"{book.title} by {book.author} ({book.published.year}), {book.status}"


@mcp.prompt
def pick_next(mood: str) -> str:
    """Ask for the next book to read, from what is on the shelf."""
    waiting = ", ".join(book.title for book in SHELF.values() if book.status == "to-read")
    return f"I feel {mood}. Which of these should I read next: {waiting or 'nothing yet'}?"


if __name__ == "__main__":
    mcp.run()
