"""What decides, acting only through sandboxes: report reading, reproduction, localization, repair, setup, app and game reproduction."""
