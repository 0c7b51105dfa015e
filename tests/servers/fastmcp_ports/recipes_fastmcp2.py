"""A recipe box, written for FastMCP 2.x the way its users write servers (our own text): mostly
resources, resource templates (one and two variables) and prompts, with pydantic models,
datetimes, sampling, Context progress and logging, and reading its own resources.
tests/server/test_fastmcp_ports.py changes only its import line to mcp_ref's and serves it over
stdio.
"""

import json
from datetime import UTC, datetime

from fastmcp import Context, FastMCP
from pydantic import BaseModel, Field

mcp = FastMCP(name="Recipe Box", version="1.2.0")


class Ingredient(BaseModel):
    name: str
    quantity: float
    unit: str


class Recipe(BaseModel):
    slug: str
    title: str
    serves: int = Field(ge=1)
    minutes: int
    updated: datetime
    ingredients: list[Ingredient]


class CookedLog(BaseModel):
    slug: str
    cooked_at: datetime
    days_since_update: int


UPDATED = datetime(2026, 2, 14, 18, 0, tzinfo=UTC)
RECIPES = {
    "pancakes": Recipe(
        slug="pancakes",
        title="Pancakes",
        serves=4,
        minutes=20,
        updated=UPDATED,
        ingredients=[
            Ingredient(name="flour", quantity=200, unit="g"),
            Ingredient(name="milk", quantity=300, unit="ml"),
            Ingredient(name="egg", quantity=2, unit="piece"),
        ],
    ),
    "omelette": Recipe(
        slug="omelette",
        title="Omelette",
        serves=1,
        minutes=10,
        updated=UPDATED,
        ingredients=[
            Ingredient(name="egg", quantity=3, unit="piece"),
            Ingredient(name="butter", quantity=10, unit="g"),
        ],
    ),
}


def recipe(slug: str) -> Recipe:
    if slug not in RECIPES:
        raise ValueError(f"No recipe called {slug!r}")
    return RECIPES[slug]


def scaled(slug: str, servings: int) -> Recipe:
    original = recipe(slug)
    factor = servings / original.serves
    return original.model_copy(
        update={
            "serves": servings,
            "ingredients": [
                item.model_copy(update={"quantity": round(item.quantity * factor, 2)})
                for item in original.ingredients
            ],
        }
    )


@mcp.resource("recipes://index", mime_type="application/json")
def index() -> list[dict]:
    """Every recipe: slug, title and time."""
    return [{"slug": r.slug, "title": r.title, "minutes": r.minutes} for r in RECIPES.values()]


@mcp.resource("recipes://{slug}", mime_type="application/json")
def recipe_resource(slug: str) -> dict:
    """One recipe, whole."""
    return recipe(slug).model_dump(mode="json")


@mcp.resource("recipes://{slug}/for/{servings}", mime_type="application/json")
def scaled_resource(slug: str, servings: int) -> dict:
    """One recipe, scaled to a number of servings."""
    return scaled(slug, servings).model_dump(mode="json")


@mcp.resource("recipes://{slug}/card", name="recipe_card", mime_type="text/markdown")
def card(slug: str) -> str:
    """One recipe as a Markdown card."""
    found = recipe(slug)
    lines = [f"# {found.title}", f"Serves {found.serves}, {found.minutes} minutes", ""]
    lines += [f"- {i.quantity:g} {i.unit} {i.name}" for i in found.ingredients]
    return "\n".join(lines)


@mcp.prompt(name="cook_along", description="Walk me through a recipe, step by step.")
def cook_along(slug: str) -> str:
    found = recipe(slug)
    return f"Walk me through making {found.title} for {found.serves}, one step at a time."


@mcp.prompt
def menu_for(guests: int, occasion: str = "dinner") -> str:
    """Plan a menu from the recipe box."""
    titles = ", ".join(r.title for r in RECIPES.values())
    return f"Plan a {occasion} for {guests} guests using some of: {titles}."


@mcp.tool
def scale(slug: str, servings: int = Field(ge=1, le=50)) -> Recipe:
    """A recipe scaled to a number of servings."""
    return scaled(slug, servings)


@mcp.tool
async def shopping_list(slugs: list[str], ctx: Context) -> dict[str, str]:
    """What to buy for several recipes, from the recipe box's own resources."""
    needed: dict[tuple[str, str], float] = {}
    for done, slug in enumerate(slugs, start=1):
        contents = await ctx.read_resource(f"recipes://{slug}")
        for item in json.loads(contents[0].content)["ingredients"]:
            key = (item["name"], item["unit"])
            needed[key] = needed.get(key, 0) + item["quantity"]
        await ctx.report_progress(progress=done, total=len(slugs))
    await ctx.info(f"Shopping for {len(slugs)} recipes")
    return {name: f"{quantity:g} {unit}" for (name, unit), quantity in sorted(needed.items())}


@mcp.tool
async def suggest(ingredients: list[str], ctx: Context) -> str:
    """Ask the client's model for a dish made of some ingredients."""
    answer = await ctx.sample(f"Suggest one dish made with: {', '.join(ingredients)}")
    return answer.text


@mcp.tool
def log_cooked(slug: str, cooked_at: datetime) -> CookedLog:
    """Note that a recipe was cooked (a moment with its offset)."""
    found = recipe(slug)
    return CookedLog(
        slug=slug, cooked_at=cooked_at, days_since_update=(cooked_at - found.updated).days
    )


if __name__ == "__main__":
    mcp.run()
