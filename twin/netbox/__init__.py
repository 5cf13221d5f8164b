"""twin's designs in NetBox: the objects (bulk-import tables) and the REST push."""
