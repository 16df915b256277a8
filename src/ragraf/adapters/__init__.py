"""Adapters over the operations layer: the MCP server, the HTTP API and agent setup (DESIGN §12)."""
