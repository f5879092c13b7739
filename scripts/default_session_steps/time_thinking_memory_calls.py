"""Calls to the clocks (time, time_mcp), sequential_thinking and the memory graph."""

from __future__ import annotations

from .step import Step, tool


def time_servers() -> list[Step]:
    return [
        tool("time_mcp__get_current_time", timezone="Europe/Paris"),
        tool("time_mcp__convert_time", source_timezone="UTC", time="12:00", target_timezone="Asia/Tokyo"),  # 21:00
        tool("time__get_current_time", timezone="America/New_York"),
        tool(
            "time__convert_time", source_timezone="America/Los_Angeles", time="09:30", target_timezone="Europe/Berlin"
        ),
        tool("time__convert_time", source_timezone="Asia/Kolkata", time="18:45", target_timezone="Australia/Sydney"),
    ]


def sequential_thinking() -> list[Step]:
    p = "sequential_thinking__sequentialthinking"
    return [
        tool(
            p,
            thought="Question: is a 3 h 30 min marathon faster than 12 km/h? A marathon is 42.195 km.",
            nextThoughtNeeded=True,
            thoughtNumber=1,
            totalThoughts=3,
        ),
        tool(
            p,
            thought="Average speed = 42.195 km / 3.5 h = 12.06 km/h, which is above 12 km/h.",
            nextThoughtNeeded=True,
            thoughtNumber=2,
            totalThoughts=3,
        ),
        tool(
            p,
            thought="Revising thought 1: the question is about the average pace, so splits do not matter.",
            nextThoughtNeeded=True,
            thoughtNumber=3,
            totalThoughts=4,
            isRevision=True,
            revisesThought=1,
        ),
        tool(
            p,
            thought="Branch: at 12 km/h exactly the marathon takes 3 h 31 min; so yes, 3 h 30 min is faster.",
            nextThoughtNeeded=False,
            thoughtNumber=4,
            totalThoughts=4,
            branchFromThought=2,
            branchId="pace-check",
        ),
    ]


def memory() -> list[Step]:
    p = "memory__"
    return [
        tool(
            p + "create_entities",
            entities=[
                {
                    "name": "Ada Lovelace",
                    "entityType": "person",
                    "observations": [
                        "Wrote the first published algorithm for a machine",
                        "Born 10 December 1815 in London",
                    ],
                },
                {"name": "Charles Babbage", "entityType": "person", "observations": ["Mathematician and inventor"]},
                {
                    "name": "Analytical Engine",
                    "entityType": "machine",
                    "observations": ["Designed by Charles Babbage", "Never completed"],
                },
            ],
        ),
        tool(
            p + "create_relations",
            relations=[
                {"from": "Ada Lovelace", "to": "Analytical Engine", "relationType": "wrote programs for"},
                {"from": "Charles Babbage", "to": "Analytical Engine", "relationType": "designed"},
                {"from": "Ada Lovelace", "to": "Charles Babbage", "relationType": "corresponded with"},
            ],
        ),
        tool(
            p + "add_observations",
            observations=[
                {"entityName": "Ada Lovelace", "contents": ["Translated Menabrea's article on the engine in 1843"]},
            ],
        ),
        tool(p + "read_graph"),
        tool(p + "search_nodes", query="Engine"),
        tool(p + "open_nodes", names=["Ada Lovelace", "Analytical Engine"]),
        Step("read", "memory://knowledge-graph"),
        tool(
            p + "delete_observations",
            deletions=[{"entityName": "Analytical Engine", "observations": ["Never completed"]}],
        ),
        tool(
            p + "delete_relations",
            relations=[
                {"from": "Ada Lovelace", "to": "Charles Babbage", "relationType": "corresponded with"},
            ],
        ),
        tool(p + "delete_entities", entityNames=["Charles Babbage"]),
        tool(p + "read_graph"),
    ]
