"""Super Search: searching crashes by their processed fields, with facets.

A derived view of the crash rows.  :mod:`.fields` names what can be searched, :mod:`.query`
parses Super Search's parameters into the :mod:`.contract`'s :class:`~.contract.Query`, and an
engine behind :class:`~.contract.SearchEngine` holds the documents and answers (the embedded
one: :mod:`.embedded`).  The store feeds it from its change records (see docs/search.md).
"""
