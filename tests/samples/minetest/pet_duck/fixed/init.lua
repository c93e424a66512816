-- A pet duck: right-click it with bread to feed it.
minetest.register_entity("pet_duck:duck", {
	initial_properties = {
		visual = "cube", visual_size = {x = 0.6, y = 0.6},
		textures = {"wool_yellow.png", "wool_yellow.png", "wool_yellow.png",
			"wool_yellow.png", "wool_yellow.png", "wool_yellow.png"},
		collisionbox = {-0.3, -0.3, -0.3, 0.3, 0.3, 0.3}, physical = true,
	},
	on_rightclick = function(self, clicker)
		local food = clicker:get_wielded_item():get_definition()
		local hunger = ((food.groups or {}).food or 0) * 2
		if hunger == 0 then return end
		self.object:set_properties({nametag = "Happy duck (" .. hunger .. ")"})
	end,
})
