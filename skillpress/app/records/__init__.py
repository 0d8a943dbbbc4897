"""The records room: state more than one room reads and writes, with the SQL that reads and
writes it: versions (and the publish check), revisions and their derivations, and approval
requests. A module here imports the base room and below; never `stages`, `operator` or `serving`
(an import contract holds it)."""
