"""Qt dashboard over bcd_core (views, item models and the worker bridge only)."""
