"""Weather stations, written for the official Python SDK's FastMCP (``mcp.server.fastmcp``, the
1.x SDK) the way its users write servers (our own text; the readings are made up).

Pydantic models with datetimes, Annotated constraints, Context logging and progress, an image,
a tool added with ``add_tool``, a resource, a resource template and two prompts.
tests/server/test_fastmcp_ports.py changes only its import line to mcp_ref's and serves it over
stdio to mcp_ref's client and to the official SDK's.
"""

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Annotated, Literal

from mcp.server.fastmcp import Context, FastMCP, Image
from pydantic import BaseModel, Field

mcp = FastMCP(
    "Weather Stations",
    instructions="Readings and forecasts of a few weather stations.",
    log_level="WARNING",
)

#: A 1x1 PNG: the badge of every station.
BADGE = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
STATIONS = {"KSEA": "Seattle", "EGLL": "London Heathrow", "RJTT": "Tokyo Haneda"}
TEMPERATURES = {"KSEA": 11.5, "EGLL": 9.0, "RJTT": 17.25}
#: When every reading was taken: fixed, so the answers are the same on every run.
TAKEN_AT = datetime(2026, 4, 2, 6, 0, tzinfo=UTC)


class Reading(BaseModel):
    station: str
    taken_at: datetime
    temperature_c: float
    wind_kmh: float = Field(description="Mean wind speed over the last ten minutes")


class Day(BaseModel):
    date: str
    high_c: float
    low_c: float


class Forecast(BaseModel):
    station: str
    issued_at: datetime
    days: list[Day]


def known(station: str) -> str:
    code = station.upper()
    if code not in STATIONS:
        raise ValueError(f"Unknown station {station!r}")
    return code


@mcp.tool()
def latest_reading(station: str) -> Reading:
    """The latest reading of a station (ICAO code, e.g. KSEA)."""
    code = known(station)
    return Reading(station=code, taken_at=TAKEN_AT, temperature_c=TEMPERATURES[code], wind_kmh=12)


@mcp.tool()
def forecast(station: str, days: Annotated[int, Field(ge=1, le=7)] = 3) -> Forecast:
    """A forecast of one to seven days."""
    code = known(station)
    start = TAKEN_AT.date()
    return Forecast(
        station=code,
        issued_at=TAKEN_AT,
        days=[
            Day(
                date=(start + timedelta(days=n)).isoformat(),
                high_c=TEMPERATURES[code] + n,
                low_c=TEMPERATURES[code] - 5,
            )
            for n in range(days)
        ],
    )


@mcp.tool(title="Convert a temperature")
def convert(value: float, to: Literal["C", "F"]) -> float:
    """Convert between Celsius and Fahrenheit."""
    return round(value * 9 / 5 + 32, 2) if to == "F" else round((value - 32) * 5 / 9, 2)


@mcp.tool()
async def sweep(stations: list[str], ctx: Context) -> dict[str, float]:
    """Read several stations, reporting progress; unknown ones are skipped with a warning."""
    temperatures = {}
    for done, station in enumerate(stations, start=1):
        if station.upper() in STATIONS:
            temperatures[station.upper()] = TEMPERATURES[station.upper()]
        else:
            await ctx.warning(f"Skipping unknown station {station}")
        await ctx.report_progress(done, len(stations), f"{done} of {len(stations)}")
    await ctx.info(f"Swept {len(temperatures)} stations")
    return temperatures


@mcp.tool()
def station_badge(station: str) -> Image:
    """The station's badge, as a PNG image."""
    known(station)
    return Image(data=BADGE, format="png")


def warmest() -> str:
    """The station that is warmest now."""
    code = max(TEMPERATURES, key=TEMPERATURES.__getitem__)
    return f"{STATIONS[code]} ({code}) at {TEMPERATURES[code]} C"


mcp.add_tool(warmest, name="warmest_station")


@mcp.resource("weather://stations", mime_type="application/json")
def stations() -> str:
    """Every station, by code."""
    return json.dumps(STATIONS)


@mcp.resource("weather://stations/{station}/latest")
def station_latest(station: str) -> str:
    """The latest reading of a station, as JSON."""
    return latest_reading(station).model_dump_json()


@mcp.prompt()
def storm_briefing(station: str, audience: str = "the public") -> str:
    """Ask for a storm briefing."""
    return f"Write a storm briefing for {audience} near {STATIONS.get(station, station)}."


@mcp.prompt(title="Packing advice")
def packing(destination: str) -> str:
    return f"What should I pack for {destination} this week?"


if __name__ == "__main__":
    mcp.run()
