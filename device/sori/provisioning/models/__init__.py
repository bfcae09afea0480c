"""Models Sori can fetch: the catalog (`catalog.toml`, shipped with the package) and the
store they install into (`sori models list|fetch|verify|use`)."""

from sori.provisioning.models.catalog import KINDS, CatalogEntry, find_entry, load_catalog
from sori.provisioning.models.store import default_models_dir, installed_path

__all__ = [
    "KINDS",
    "CatalogEntry",
    "default_models_dir",
    "find_entry",
    "installed_path",
    "load_catalog",
]
