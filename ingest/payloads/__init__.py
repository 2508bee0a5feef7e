"""The bytes a record holds: hashing and sidecars (files), parsing by content under budgets (documents, limits,
parsers/), parsing ahead on other cores (parse_ahead)."""
