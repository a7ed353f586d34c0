"""Reading and writing files: typed input errors that name file, line and rule; JSON Lines; atomic writes."""
