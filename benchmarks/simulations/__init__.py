"""The simulation models behind the benchmarks' coverage, power and threshold figures: data drawn from a known
truth, then read by the same statistics the report uses (tasks/stats), so a benchmark can count how often an
interval covers the truth or a planned run detects a drop."""
