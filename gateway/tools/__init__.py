"""Tools as the gateway serves them: the catalog of every server's tools, their names on the wire
(prefix, bare, benchmark naming), their input schemas and inline argument validation, and the
breaking / compatible classification of schema changes. Below: specs, commandline, runtime, encoding, errors.

The face, what other rooms may import: catalog, naming, schema_diff, validation.
"""

# Module names, not re-exports: importing the room imports none of them.
__all__ = ["catalog", "naming", "schema_diff", "validation"]
