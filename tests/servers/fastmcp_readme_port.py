# server.py: the shapes of FastMCP's README server (v2), written as a FastMCP user writes them, on mcp_ref.
# Our own text; each line that had to change is marked "mcp_ref:" (issue 23; tests/server/test_fastmcp_port.py runs it).
import asyncio
from datetime import UTC, datetime
from decimal import Decimal
from typing import Annotated, Literal
from uuid import UUID, uuid5

from pydantic import BaseModel, Field

from mcp_ref import Context, Server as FastMCP  # mcp_ref: was: from fastmcp import FastMCP, Context

mcp = FastMCP("Demo 🚀")


@mcp.tool
def add(a: int, b: int) -> int:
    """Add two numbers"""
    return a + b


@mcp.tool
def multiply(a: float, b: float) -> float:
    """Multiplies two numbers."""
    return a * b


@mcp.tool
def hello(name: str) -> str:
    return f"Hello, {name}!"


class Address(BaseModel):
    street: str
    city: str
    postcode: Annotated[str, Field(pattern=r"^\d{5}$", description="Five digits")]


class Order(BaseModel):
    item: str
    quantity: int = Field(default=1, ge=1, le=100)
    ship_to: Address


class Receipt(BaseModel):
    order_id: UUID
    placed_at: datetime
    total: Decimal
    order: Order


@mcp.tool
def place_order(order: Order, unit_price: Decimal) -> Receipt:
    """Place an order; the receipt says what it costs."""
    return Receipt(
        order_id=uuid5(UUID(int=0), order.item),
        placed_at=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC),
        total=unit_price * order.quantity,
        order=order,
    )


@mcp.tool
def get_weather(
    city: Annotated[str, Field(description="The city to look up")],
    unit: Literal["celsius", "fahrenheit"] = "celsius",
) -> dict:
    """The weather in a city."""
    return {"city": city, "temperature": 22.5 if unit == "celsius" else 72.5, "unit": unit}


@mcp.tool
async def long_running_task(task_name: str, ctx: Context, steps: int = 5) -> str:
    """Execute a task with progress updates."""
    await ctx.info(f"Starting: {task_name}")
    for i in range(steps):
        await ctx.report_progress(
            progress=(i + 1) / steps, total=1.0, message=f"Step {i + 1}/{steps}"
        )
        await asyncio.sleep(0)
    return f"Task '{task_name}' completed"


@mcp.tool
async def process_data(uri: str, ctx: Context) -> str:
    await ctx.info(f"Processing {uri}...")
    data = await ctx.read_resource(uri)
    summary = await ctx.sample(f"Summarize: {data[0].text[:500]}")
    return summary.text


# Static resource
@mcp.resource("config://version")
def get_version():
    return "2.0.1"


# Dynamic resource template
@mcp.resource("users://{user_id}/profile")
def get_profile(user_id: int):
    return {"name": f"User {user_id}", "status": "active", "next": user_id + 1}


@mcp.prompt
def summarize_request(text: str) -> str:
    """Generate a prompt asking for a summary."""
    return f"Please summarize the following text:\n\n{text}"


if __name__ == "__main__":
    mcp.run()
