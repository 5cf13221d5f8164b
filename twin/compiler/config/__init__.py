"""Switch configurations: intent computed once from the design; FRR, EOS and OpenSM rendered by Jinja2
templates, SONiC config_db.json built as dictionaries (:mod:`twin.compiler.config.sonic`)."""
