"""Switch configurations: intent computed once from the design, rendered by Jinja2 templates."""
