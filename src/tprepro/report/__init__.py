"""Tables, published numbers, figures, HTML pages and DVC plot data shared by the experiments."""
