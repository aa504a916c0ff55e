"""The bcd desktop dashboard: Qt views, item models and one worker bridge over bcd_core."""
