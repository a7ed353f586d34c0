"""Statistics of the measurement: intervals, paired comparisons, planning, calibration, weighting.

Pure functions over numpy arrays and counts: nothing here reads the warehouse or imports prefect.
"""
