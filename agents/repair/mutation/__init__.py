"""Fix templates: AST mutants of one suspicious line, spliced back with minimal textual change."""
