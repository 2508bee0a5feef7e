"""compiler: finds decision moments in the graph and materializes realized-only tasks (DESIGN §4-§5)."""
