"""Reports: figures from the views, tables, gates and verdict, terminal/markdown/HTML rendering."""
