"""The site language: the models of a site file and the catalog's entries (pydantic, units at the
boundary). Validating a site against them and resolving it into a :class:`~twin.compiler.resolve.spec.Spec`
is the compiler's first pass (:mod:`twin.compiler.resolve.validate`)."""
