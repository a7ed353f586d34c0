"""Live traffic into new task-set versions: read production turns, pick a window, mask personal data,
measure production weights, draw a stratified sample free of earlier versions' (near-)duplicates,
publish it as a provisional version with its labelling queue, and measure drift and label age."""
