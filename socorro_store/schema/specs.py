"""Table and family specs: the data types every layer shares (a leaf module, like errors.py).

:mod:`socorro_store.schema.spec_loader` loads them from ``table_specs/*.toml``; backends create tables from
them; the engine and the gateway keep a family's attributes in a :class:`FamilySpec`.
"""

from dataclasses import dataclass

FOREVER = 2147483647  # HBase's TTL for "never expires", in seconds
SALTS = "0123456789abcdef"  # the 16 salt characters of salted row keys (a crash id's first one)
ATTRIBUTE_NAMES = ("COMPRESSION", "VERSIONS", "TTL", "BLOCKSIZE", "IN_MEMORY", "BLOCKCACHE")


@dataclass(frozen=True)
class FamilySpec:
    """One column family and its HBase attributes (TTL in seconds)."""

    name: str
    compression: str = "NONE"
    versions: int = 1
    ttl: int = FOREVER
    blocksize: int = 65536
    in_memory: bool = False
    blockcache: bool = True

    @property
    def compressed(self):
        return self.compression != "NONE"

    def attributes(self):
        """The attributes keyed by their HBase names, in spec order."""
        return {name: getattr(self, name.lower()) for name in ATTRIBUTE_NAMES}


@dataclass(frozen=True)
class TableSpec:
    """A table: its name, its families (in spec order) and whether its keys are salted."""

    name: str
    families: tuple
    salted: bool = False
    description: str = ""
    addition: bool = False
    path: str = ""

    def family(self, name):
        for fam in self.families:
            if fam.name == name:
                return fam
        return None

    @property
    def family_names(self):
        return [fam.name for fam in self.families]

    def to_dict(self):
        return {
            "name": self.name,
            "salted": self.salted,
            "addition": self.addition,
            "description": self.description,
            "families": {fam.name: fam.attributes() for fam in self.families},
        }


def family_from_attributes(name, attributes):
    """Build a :class:`FamilySpec` from ``{HBASE_NAME: value}`` (missing ones take HBase defaults)."""
    kwargs = {key.lower(): value for key, value in attributes.items()}
    return FamilySpec(name=name, **kwargs)
