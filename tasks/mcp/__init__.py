"""The MCP client side: connecting to a server through the official SDK from plain threads."""
