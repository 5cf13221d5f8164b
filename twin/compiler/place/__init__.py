"""Placement: GPU and network racks onto hall positions under power and cooling limits."""
