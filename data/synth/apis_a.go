package synth

// APIs of the travel, food, messaging and calendar domains.
//
// Descriptions are what the model reads in the tool list; they decide the
// language of named entities ("in English" vs "as the user wrote it"), as in
// paper 000's protocol. Templates: template i mentions the same arguments in
// every language; "?" at the end marks a question.

const (
	descCityEN   = "City name in English"
	descCityUser = "City name as written by the user"
	descDate     = "Date, YYYY-MM-DD"
	descTime     = "Time, HH:MM"
)

var apisA = []*API{
	// --- travel ---
	{Name: "search_flights", Domain: "travel", Desc: "Search flights between two cities.",
		Args: []Arg{enArg("origin", "city", "Departure city name in English"), enArg("destination", "city", "Arrival city name in English"),
			dArg("date", descDate), opt(eArg("cabin", "cabin", "Cabin class"))},
		T: map[string][]string{
			"en": {"Find me a flight from {origin} to {destination} on {date}", "I need a flight in {cabin} from {origin} to {destination} on {date}"},
			"es": {"Búscame un vuelo de {origin} a {destination} el {date}", "Necesito un vuelo en {cabin} de {origin} a {destination} para el {date}"},
			"fr": {"Trouve-moi un vol entre {origin} et {destination} le {date}", "Je cherche un vol en {cabin} depuis {origin} pour {destination} le {date}"},
			"it": {"Cercami un volo da {origin} a {destination} il {date}", "Mi serve un volo in {cabin} da {origin} a {destination} per il {date}"},
			"nl": {"Zoek een vlucht van {origin} naar {destination} op {date}", "Ik wil een vlucht in {cabin} van {origin} naar {destination} op {date}"},
		}},
	{Name: "book_hotel", Domain: "travel", Desc: "Book a hotel room.",
		Args: []Arg{cityUser("city", descCityUser), dArg("check_in", "Check-in date, YYYY-MM-DD"),
			iArg("nights", "Number of nights", 2, 14, 1), opt(eArg("room_type", "room_type", "Room type"))},
		T: map[string][]string{
			"en": {"Book a hotel in {city} from {check_in} for {nights} nights", "I want a {room_type} in {city} for {nights} nights starting {check_in}"},
			"es": {"Reserva un hotel en {city} desde el {check_in} durante {nights} noches", "Quiero una {room_type} en {city} para {nights} noches a partir del {check_in}"},
			"fr": {"Réserve un hôtel à {city} à partir du {check_in} pour {nights} nuits", "Je veux une {room_type} à {city} pour {nights} nuits dès le {check_in}"},
			"it": {"Prenota un hotel a {city} dal {check_in} per {nights} notti", "Vorrei una {room_type} a {city} per {nights} notti dal {check_in}"},
			"nl": {"Boek een hotel in {city} vanaf {check_in} voor {nights} nachten", "Ik wil een {room_type} in {city} voor {nights} nachten vanaf {check_in}"},
		}},
	{Name: "rent_car", Domain: "travel", Desc: "Rent a car.",
		Args: []Arg{enArg("city", "city", "Pickup city name in English"), dArg("pickup_date", descDate),
			iArg("days", "Rental length in days", 2, 14, 1), opt(eArg("car_class", "car_class", "Car class"))},
		T: map[string][]string{
			"en": {"Rent a car in {city} on {pickup_date} for {days} days", "I need to rent {car_class} in {city} for {days} days from {pickup_date}"},
			"es": {"Alquila un coche en {city} el {pickup_date} por {days} días", "Necesito alquilar {car_class} en {city} durante {days} días desde el {pickup_date}"},
			"fr": {"Loue une voiture à {city} le {pickup_date} pour {days} jours", "J'ai besoin de louer {car_class} à {city} pendant {days} jours à partir du {pickup_date}"},
			"it": {"Noleggia un'auto a {city} il {pickup_date} per {days} giorni", "Devo noleggiare {car_class} a {city} per {days} giorni dal {pickup_date}"},
			"nl": {"Huur een auto in {city} op {pickup_date} voor {days} dagen", "Ik moet {car_class} huren in {city} voor {days} dagen vanaf {pickup_date}"},
		}},
	{Name: "find_attractions", Domain: "travel", Desc: "Suggest things to see in a city.",
		Args: []Arg{cityUser("city", descCityUser), fArg("interest", "interest", "What the user likes")},
		T: map[string][]string{
			"en": {"What to see in {city}? Theme: {interest}", "Suggest visits in {city} on the theme {interest}"},
			"es": {"¿Qué ver en {city}? Tema: {interest}", "Recomiéndame visitas en {city} sobre el tema {interest}"},
			"fr": {"Que voir à {city} ? Thème : {interest}", "Suggère-moi des visites à {city} sur le thème {interest}"},
			"it": {"Cosa vedere a {city}? Tema: {interest}", "Suggeriscimi visite a {city} sul tema {interest}"},
			"nl": {"Wat is er te zien in {city}? Thema: {interest}", "Geef me tips in {city} rond het thema {interest}"},
		}},
	{Name: "get_train_times", Domain: "travel", Desc: "Train timetable between two cities.",
		Args: []Arg{enArg("from_city", "city", "Departure city name in English"), enArg("to_city", "city", "Arrival city name in English"), dArg("date", descDate)},
		T: map[string][]string{
			"en": {"When are the trains from {from_city} to {to_city} on {date}?", "Train times from {from_city} to {to_city} for {date}"},
			"es": {"¿A qué hora salen los trenes de {from_city} a {to_city} el {date}?", "Horarios de tren de {from_city} a {to_city} para el {date}"},
			"fr": {"Quels sont les horaires des trains entre {from_city} et {to_city} le {date} ?", "Horaires de train depuis {from_city} pour {to_city} le {date}"},
			"it": {"A che ora partono i treni da {from_city} a {to_city} il {date}?", "Orari dei treni da {from_city} a {to_city} per il {date}"},
			"nl": {"Hoe laat gaan de treinen van {from_city} naar {to_city} op {date}?", "Treintijden van {from_city} naar {to_city} op {date}"},
		}},
	{Name: "book_taxi", Domain: "travel", Desc: "Order a taxi.",
		Args: []Arg{fArg("destination", "place", "Where to go"), tArg("time", "Pickup time, HH:MM"), opt(iArg("passengers", "Number of passengers", 2, 4, 1))},
		T: map[string][]string{
			"en": {"Get me a taxi at {time}, destination: {destination}", "Book a taxi for {passengers} people at {time} to {destination}"},
			"es": {"Pídeme un taxi a las {time}. Destino: {destination}", "Reserva un taxi para {passengers} personas a las {time}, destino: {destination}"},
			"fr": {"Appelle-moi un taxi pour {time}, destination : {destination}", "Réserve un taxi pour {passengers} personnes à {time}, destination : {destination}"},
			"it": {"Chiamami un taxi per le {time}, destinazione: {destination}", "Prenota un taxi per {passengers} persone alle {time}, destinazione: {destination}"},
			"nl": {"Bestel een taxi om {time}, bestemming: {destination}", "Boek een taxi voor {passengers} personen om {time}, bestemming: {destination}"},
		}},
	{Name: "check_flight_status", Domain: "travel", Desc: "Get the status of a flight.",
		Args: []Arg{idArg("flight_number", "flight", "Flight number, e.g. IB3456"), opt(dArg("date", descDate))},
		T: map[string][]string{
			"en": {"Is flight {flight_number} on time?", "What's the status of flight {flight_number} on {date}?"},
			"es": {"¿El vuelo {flight_number} va con retraso?", "¿Cuál es el estado del vuelo {flight_number} el {date}?"},
			"fr": {"Le vol {flight_number} est-il à l'heure ?", "Quel est le statut du vol {flight_number} le {date} ?"},
			"it": {"Il volo {flight_number} è in orario?", "Qual è lo stato del volo {flight_number} il {date}?"},
			"nl": {"Is vlucht {flight_number} op tijd?", "Wat is de status van vlucht {flight_number} op {date}?"},
		}},

	// --- food ---
	{Name: "order_food", Domain: "food", Desc: "Order food for delivery.",
		Args: []Arg{idArg("restaurant", "restaurant", "Restaurant name"), fArg("dish", "dish", "Dish to order"), iArg("servings", "Number of servings", 2, 6, 1)},
		T: map[string][]string{
			"en": {"Order {dish} from {restaurant}, {servings} servings", "I'd like {servings} portions of {dish} from {restaurant}"},
			"es": {"Pide {dish} en {restaurant}, {servings} raciones", "Quiero {servings} raciones de {dish} de {restaurant}"},
			"fr": {"Commande {dish} chez {restaurant}, {servings} portions", "Je voudrais {dish} de chez {restaurant}, {servings} portions"},
			"it": {"Ordina {dish} da {restaurant}, {servings} porzioni", "Vorrei {servings} porzioni di {dish} da {restaurant}"},
			"nl": {"Bestel {dish} bij {restaurant}, {servings} porties", "Ik wil {servings} porties {dish} van {restaurant}"},
		}},
	{Name: "find_restaurants", Domain: "food", Desc: "Find restaurants in a city.",
		Args: []Arg{cityUser("city", descCityUser), eArg("cuisine", "cuisine", "Type of cuisine"),
			opt(iArg("max_price", "Maximum price per person in euros", 15, 80, 5))},
		T: map[string][]string{
			"en": {"Find {cuisine} restaurants in {city}", "Show me {cuisine} restaurants in {city} under {max_price} euros per person"},
			"es": {"Busca restaurantes de comida {cuisine} en {city}", "Muéstrame restaurantes de comida {cuisine} en {city} por menos de {max_price} euros por persona"},
			"fr": {"Trouve des restaurants de cuisine {cuisine} à {city}", "Montre-moi des restaurants de cuisine {cuisine} à {city} à moins de {max_price} euros par personne"},
			"it": {"Trova ristoranti di cucina {cuisine} a {city}", "Mostrami ristoranti di cucina {cuisine} a {city} sotto i {max_price} euro a persona"},
			"nl": {"Zoek {cuisine} restaurants in {city}", "Laat {cuisine} restaurants in {city} zien onder {max_price} euro per persoon"},
		}},
	{Name: "reserve_table", Domain: "food", Desc: "Reserve a table at a restaurant.",
		Args: []Arg{idArg("restaurant", "restaurant", "Restaurant name"), dArg("date", descDate), tArg("time", descTime), iArg("party_size", "Number of people", 2, 8, 1)},
		T: map[string][]string{
			"en": {"Reserve a table for {party_size} at {restaurant} on {date} at {time}", "Book {restaurant} for {party_size} people, {date} at {time}"},
			"es": {"Reserva una mesa para {party_size} en {restaurant} el {date} a las {time}", "Quiero mesa en {restaurant} para {party_size} personas el {date} a las {time}"},
			"fr": {"Réserve une table pour {party_size} chez {restaurant} le {date} à {time}", "Une table chez {restaurant} pour {party_size} personnes, le {date} à {time}"},
			"it": {"Prenota un tavolo per {party_size} da {restaurant} il {date} alle {time}", "Vorrei un tavolo da {restaurant} per {party_size} persone il {date} alle {time}"},
			"nl": {"Reserveer een tafel voor {party_size} bij {restaurant} op {date} om {time}", "Boek {restaurant} voor {party_size} personen op {date} om {time}"},
		}},
	{Name: "get_recipe", Domain: "food", Desc: "Look up a recipe.",
		Args: []Arg{fArg("dish", "dish", "Dish to cook"), opt(iArg("servings", "Number of people", 2, 8, 1))},
		T: map[string][]string{
			"en": {"Give me a recipe for {dish}", "Find a recipe for {dish} for {servings} people"},
			"es": {"Dame la receta de {dish}", "Busca una receta de {dish} para {servings} personas"},
			"fr": {"Donne-moi une recette : {dish}", "Trouve une recette pour {servings} personnes : {dish}"},
			"it": {"Dammi la ricetta di {dish}", "Cerca una ricetta per {servings} persone: {dish}"},
			"nl": {"Geef me een recept voor {dish}", "Zoek een recept voor {dish} voor {servings} personen"},
		}},
	{Name: "add_to_shopping_list", Domain: "food", Desc: "Add an item to the shopping list.",
		Args: []Arg{fArg("item", "grocery", "Item to buy"), opt(iArg("quantity", "How many", 2, 6, 1))},
		T: map[string][]string{
			"en": {"Add {item} to my shopping list", "Put {item} on the shopping list, quantity: {quantity}"},
			"es": {"Añade {item} a la lista de la compra", "Apunta {item} en la lista de la compra, cantidad: {quantity}"},
			"fr": {"Ajoute {item} à la liste de courses", "Note {item} sur la liste de courses, quantité : {quantity}"},
			"it": {"Aggiungi {item} alla lista della spesa", "Segna {item} sulla lista della spesa, quantità: {quantity}"},
			"nl": {"Zet {item} op het boodschappenlijstje", "Voeg {item} toe aan de boodschappenlijst, aantal: {quantity}"},
		}},
	{Name: "leave_review", Domain: "food", Desc: "Post a restaurant review.",
		Args: []Arg{idArg("restaurant", "restaurant", "Restaurant name"), iArg("rating", "Stars from 1 to 5", 2, 5, 1), fArg("comment", "review", "Review text")},
		T: map[string][]string{
			"en": {"Rate {restaurant} {rating} stars: {comment}", "Write a review for {restaurant}, {rating} out of 5, with the comment: {comment}"},
			"es": {"Valora {restaurant} con {rating} estrellas: {comment}", "Escribe una reseña de {restaurant}, {rating} de 5, con el comentario: {comment}"},
			"fr": {"Note {restaurant} {rating} étoiles : {comment}", "Écris un avis sur {restaurant}, {rating} sur 5, avec le commentaire : {comment}"},
			"it": {"Dai {rating} stelle a {restaurant}: {comment}", "Scrivi una recensione per {restaurant}, {rating} su 5, con il commento: {comment}"},
			"nl": {"Geef {restaurant} {rating} sterren: {comment}", "Schrijf een review voor {restaurant}, {rating} van de 5, met de opmerking: {comment}"},
		}},

	// --- messaging ---
	{Name: "send_message", Domain: "messaging", Desc: "Send a chat message to a contact.",
		Args: []Arg{idArg("contact", "contact", "Contact name"), fArg("text", "message", "Message text"), opt(eArg("channel", "channel", "Messaging app"))},
		T: map[string][]string{
			"en": {"Message {contact}: {text}", "Send {contact} a {channel} message: {text}"},
			"es": {"Escríbele a {contact}: {text}", "Manda un {channel} a {contact} diciendo: {text}"},
			"fr": {"Écris à {contact} : {text}", "Envoie un message {channel} à {contact} : {text}"},
			"it": {"Scrivi a {contact}: {text}", "Manda un messaggio {channel} a {contact}: {text}"},
			"nl": {"Stuur {contact} een bericht: {text}", "Stuur via {channel} naar {contact}: {text}"},
		}},
	{Name: "send_email", Domain: "messaging", Desc: "Send an e-mail.",
		Args: []Arg{idArg("to", "email", "Recipient e-mail address"), fArg("subject", "event", "Subject line")},
		T: map[string][]string{
			"en": {"Email {to} with the subject {subject}", "Send an email to {to}, subject: {subject}"},
			"es": {"Envía un correo a {to} con el asunto {subject}", "Manda un email a {to}. Asunto: {subject}"},
			"fr": {"Envoie un e-mail à {to} avec l'objet {subject}", "Écris un mail à {to}, objet : {subject}"},
			"it": {"Invia un'email a {to} con oggetto {subject}", "Manda una mail a {to}, oggetto: {subject}"},
			"nl": {"Stuur een e-mail naar {to} met als onderwerp {subject}", "Mail {to}, onderwerp: {subject}"},
		}},
	{Name: "create_group_chat", Domain: "messaging", Desc: "Create a group chat.",
		Args: []Arg{fArg("name", "group", "Group name"), idArg("member", "contact", "First member to add")},
		T: map[string][]string{
			"en": {"Create a group called {name} with {member}", "Start a group chat “{name}” and add {member}"},
			"es": {"Crea un grupo llamado {name} con {member}", "Abre un chat de grupo «{name}» y añade a {member}"},
			"fr": {"Crée un groupe appelé {name} avec {member}", "Lance une discussion de groupe « {name} » et ajoute {member}"},
			"it": {"Crea un gruppo chiamato {name} con {member}", "Apri una chat di gruppo «{name}» e aggiungi {member}"},
			"nl": {"Maak een groep met de naam {name} met {member}", "Start een groepschat “{name}” en voeg {member} toe"},
		}},
	{Name: "set_status", Domain: "messaging", Desc: "Set the chat status message.",
		Args: []Arg{fArg("text", "status", "Status text"), opt(iArg("hours", "How long, in hours", 2, 8, 1))},
		T: map[string][]string{
			"en": {"Set my status to {text}", "Change my status for {hours} hours to {text}"},
			"es": {"Pon mi estado: {text}", "Cambia mi estado durante {hours} horas: {text}"},
			"fr": {"Mets mon statut : {text}", "Change mon statut pour {hours} heures : {text}"},
			"it": {"Imposta il mio stato: {text}", "Cambia il mio stato per {hours} ore: {text}"},
			"nl": {"Zet mijn status op {text}", "Zet mijn status voor {hours} uur op {text}"},
		}},
	{Name: "call_contact", Domain: "messaging", Desc: "Start a call with a contact.",
		Args: []Arg{idArg("contact", "contact", "Contact name"), eArg("mode", "call_mode", "Call type")},
		T: map[string][]string{
			"en": {"Start a {mode} with {contact}", "I want a {mode} with {contact}"},
			"es": {"Haz una {mode} a {contact}", "Inicia una {mode} con {contact}"},
			"fr": {"Lance un {mode} avec {contact}", "Passe un {mode} à {contact}"},
			"it": {"Fai una {mode} a {contact}", "Avvia una {mode} con {contact}"},
			"nl": {"Start een {mode} met {contact}", "Begin een {mode} met {contact}"},
		}},

	// --- calendar ---
	{Name: "create_event", Domain: "calendar", Desc: "Add an event to the calendar.",
		Args: []Arg{fArg("title", "event", "Event title"), dArg("date", descDate), tArg("time", descTime),
			opt(iArg("duration_minutes", "Length in minutes", 30, 120, 15))},
		T: map[string][]string{
			"en": {"Create the event “{title}” on {date} at {time}", "Add {title} to the calendar on {date} at {time} for {duration_minutes} minutes"},
			"es": {"Crea el evento «{title}» el {date} a las {time}", "Añade {title} al calendario el {date} a las {time} durante {duration_minutes} minutos"},
			"fr": {"Crée l'événement « {title} » le {date} à {time}", "Ajoute {title} au calendrier le {date} à {time} pour {duration_minutes} minutes"},
			"it": {"Crea l'evento «{title}» il {date} alle {time}", "Aggiungi {title} al calendario il {date} alle {time} per {duration_minutes} minuti"},
			"nl": {"Maak het evenement “{title}” aan op {date} om {time}", "Zet {title} in de agenda op {date} om {time} voor {duration_minutes} minuten"},
		}},
	{Name: "list_events", Domain: "calendar", Desc: "List the calendar events of a day.",
		Args: []Arg{dArg("date", descDate)},
		T: map[string][]string{
			"en": {"What's on my calendar on {date}?", "Show my appointments for {date}"},
			"es": {"¿Qué tengo en la agenda el {date}?", "Enséñame mis citas del {date}"},
			"fr": {"Qu'est-ce que j'ai dans mon agenda le {date} ?", "Montre-moi mes rendez-vous du {date}"},
			"it": {"Cosa ho in agenda il {date}?", "Mostrami i miei appuntamenti del {date}"},
			"nl": {"Wat staat er in mijn agenda op {date}?", "Laat mijn afspraken van {date} zien"},
		}},
	{Name: "cancel_event", Domain: "calendar", Desc: "Cancel a calendar event.",
		Args: []Arg{fArg("title", "event", "Event title"), dArg("date", descDate)},
		T: map[string][]string{
			"en": {"Cancel the event “{title}” on {date}", "Remove {title} from my calendar on {date}"},
			"es": {"Cancela el evento «{title}» del {date}", "Borra {title} de la agenda del {date}"},
			"fr": {"Annule l'événement « {title} » du {date}", "Supprime {title} de l'agenda du {date}"},
			"it": {"Annulla l'evento «{title}» del {date}", "Cancella {title} dall'agenda del {date}"},
			"nl": {"Annuleer “{title}” op {date}", "Verwijder het evenement “{title}” van {date}"},
		}},
	{Name: "invite_to_event", Domain: "calendar", Desc: "Invite a contact to an event.",
		Args: []Arg{fArg("title", "event", "Event title"), idArg("contact", "contact", "Contact name")},
		T: map[string][]string{
			"en": {"Invite {contact} to the event “{title}”", "Add {contact} as a guest to {title}"},
			"es": {"Invita a {contact} al evento «{title}»", "Añade a {contact} como invitado a {title}"},
			"fr": {"Invite {contact} à l'événement « {title} »", "Ajoute {contact} aux invités de « {title} »"},
			"it": {"Invita {contact} all'evento «{title}»", "Aggiungi {contact} agli invitati di «{title}»"},
			"nl": {"Nodig {contact} uit voor “{title}”", "Voeg {contact} toe als gast bij “{title}”"},
		}},
	{Name: "find_free_slot", Domain: "calendar", Desc: "Find a free time slot in the calendar.",
		Args: []Arg{dArg("date", descDate), iArg("duration_minutes", "Length in minutes", 30, 120, 15)},
		T: map[string][]string{
			"en": {"When am I free on {date} for {duration_minutes} minutes?", "Find a free slot of {duration_minutes} minutes on {date}"},
			"es": {"¿Cuándo tengo {duration_minutes} minutos libres el {date}?", "Busca un hueco de {duration_minutes} minutos el {date}"},
			"fr": {"Quand suis-je libre {duration_minutes} minutes le {date} ?", "Trouve un créneau libre de {duration_minutes} minutes le {date}"},
			"it": {"Quando ho {duration_minutes} minuti liberi il {date}?", "Trova uno spazio libero di {duration_minutes} minuti il {date}"},
			"nl": {"Wanneer heb ik {duration_minutes} minuten vrij op {date}?", "Zoek een vrij moment van {duration_minutes} minuten op {date}"},
		}},
}
